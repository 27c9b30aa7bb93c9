"""What a recipe takes on assumption, and where it departs from its source: settings its
source does not give (``kind: assumed``) or gives otherwise (``kind: differs``), marked in the
recipe and printed as caveats wherever its numbers are (``--check``, 04_compare's variant and
reference rows, the report).

A seed's recipe fills gaps in its write-up — prompt lengths it does not print, a sampling it
does not state, a repository it does not name — and a reader of the results must be able to
tell those from what the source says; a departure the recipe cannot avoid (dummy weights, a
stand-in tokenizer, other GPUs) belongs on the same rows, not only in a comment. Each
:class:`Assumption` names the setting by its path in the recipe
(``scenarios.greedy-5.input_len``, ``variants.openjet-mtp-d4.model.id``,
``scenarios.*.sampling``), the value taken and why; :func:`check_assumptions` refuses a path
that names no scenario, variant or recipe key, and :func:`assumption_caveats` gives the lines
for a variant's row of one scenario.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

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
    kind: Literal["assumed", "differs"] = Field(
        "assumed", description="assumed: the source does not give the setting; differs: it "
                               "does, and the recipe departs from it on purpose (what the "
                               "source did is in why)")

    @property
    def caveat(self) -> str:
        """The line printed wherever the numbers it shapes are."""
        head = ("assumed, not from the source" if self.kind == "assumed"
                else "differs from the source")
        return f"{head}: {self.setting} = {self.value} ({self.why})"

    def applies(self, variant: str, scenario: str) -> bool:
        """Whether it shapes the row of ``variant`` at ``scenario``."""
        head, _, rest = self.setting.partition(".")
        if head == "scenarios" and rest:
            return _names(rest, {"*", scenario})
        if head == "variants" and rest:
            return _names(rest, {"*", variant})
        return True


    def for_variant(self, variant: str) -> Assumption | None:
        """This assumption as ``variant``'s own recipe reads it (a recipe of its engine and
        model, without variants): ``variants.<variant>.KEY`` and ``variants.*.KEY`` become the
        recipe path of KEY (``speculative`` and ``args`` live in ``engine``); another
        variant's is none of its business (None); every other path stays."""
        head, _, rest = self.setting.partition(".")
        if head != "variants":
            return self
        name = next((n for n in ("*", variant) if rest.startswith(n + ".")), None)
        if name is None:
            return None
        key = rest[len(name) + 1:]
        first = key.partition(".")[0]
        if first in _IN_ENGINE:
            key = f"engine.{key}"
        return self.model_copy(update={"setting": key})


#: a variant's keys that its own recipe keeps under ``engine``
_IN_ENGINE = frozenset({"speculative", "args"})


def _names(rest: str, names: Iterable[str]) -> bool:
    """Whether the path after ``scenarios.`` / ``variants.`` starts with one of ``names`` (a
    name may hold dots: ``kimi-k2.6-int4-text``)."""
    return any(n and (rest == n or rest.startswith(n + ".")) for n in names)


def check_assumptions(assumptions: Sequence[Assumption], scenarios: Iterable[str],
                      variants: Iterable[str], keys: Iterable[str]) -> None:
    """Refuse an assumption whose path names no scenario, variant or recipe key
    (``ValueError`` naming it: the recipe's loader turns it into exit code 2)."""
    named = {"scenarios": set(scenarios), "variants": set(variants)}
    for i, a in enumerate(assumptions):
        head, _, rest = a.setting.partition(".")
        if head not in set(keys):
            raise ValueError(f"assumptions[{i}].setting: {head!r} is not a recipe key")
        if head in named and not _names(rest, named[head] | {"*"}):
            have = ", ".join(sorted(named[head])) or "none"
            raise ValueError(f"assumptions[{i}].setting: {a.setting!r} names no {head[:-1]} "
                             f"of the recipe ({have})")


def assumption_caveats(assumptions: Sequence[Assumption], variant: str = "",
                       scenario: str = "") -> list[str]:
    """The caveat lines of the assumptions that shape ``variant`` at ``scenario`` (all of
    them when both are empty)."""
    return [a.caveat for a in assumptions
            if (not variant and not scenario) or a.applies(variant, scenario)]
