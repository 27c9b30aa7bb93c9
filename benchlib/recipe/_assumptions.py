"""What a recipe takes on assumption: settings its source does not give, marked in the recipe
and printed as caveats wherever its numbers are (``--check``, 04_compare's rows, the report).

A seed's recipe fills gaps in its write-up — prompt lengths it does not print, a sampling it
does not state, a repository it does not name — and a reader of the results must be able to
tell those from what the source says. Each :class:`Assumption` names the setting by its path
in the recipe (``scenarios.greedy-5.input_len``, ``variants.openjet-mtp-d4.model.id``,
``scenarios.*.sampling``), the value taken and why; :func:`check_assumptions` refuses a path
that names no scenario, variant or recipe key, and :func:`assumption_caveats` gives the lines
for a variant's row of one scenario.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Assumption", "assumption_caveats", "check_assumptions"]


class Assumption(BaseModel):
    """One setting the source does not give, and the value the recipe takes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    setting: str = Field(pattern=r"^[A-Za-z_]+(\.[A-Za-z0-9_.*-]+)*$",
                         description="the setting's path in the recipe: "
                                     "scenarios.NAME.KEY, variants.NAME.KEY, or a top-level "
                                     "key (NAME may be *: every one)")
    value: str = Field(description="the value the recipe takes, as it reads")
    why: str = Field(description="what the source says or does not, and why this value")

    @property
    def caveat(self) -> str:
        """The line printed wherever the numbers it shapes are."""
        return f"assumed, not from the source: {self.setting} = {self.value} ({self.why})"

    def applies(self, variant: str, scenario: str) -> bool:
        """Whether it shapes the row of ``variant`` at ``scenario``."""
        parts = self.setting.split(".")
        if parts[0] == "scenarios" and len(parts) > 1:
            return parts[1] in ("*", scenario)
        if parts[0] == "variants" and len(parts) > 1:
            return parts[1] in ("*", variant)
        return True


def check_assumptions(assumptions: Sequence[Assumption], scenarios: Iterable[str],
                      variants: Iterable[str], keys: Iterable[str]) -> None:
    """Refuse an assumption whose path names no scenario, variant or recipe key
    (``ValueError`` naming it: the recipe's loader turns it into exit code 2)."""
    named = {"scenarios": set(scenarios), "variants": set(variants)}
    for i, a in enumerate(assumptions):
        head, *rest = a.setting.split(".")
        if head not in set(keys):
            raise ValueError(f"assumptions[{i}].setting: {head!r} is not a recipe key")
        if head in named and (not rest or rest[0] not in named[head] | {"*"}):
            have = ", ".join(sorted(named[head])) or "none"
            raise ValueError(f"assumptions[{i}].setting: {a.setting!r} names no {head[:-1]} "
                             f"of the recipe ({have})")


def assumption_caveats(assumptions: Sequence[Assumption], variant: str = "",
                       scenario: str = "") -> list[str]:
    """The caveat lines of the assumptions that shape ``variant`` at ``scenario`` (all of
    them when both are empty)."""
    return [a.caveat for a in assumptions
            if (not variant and not scenario) or a.applies(variant, scenario)]
