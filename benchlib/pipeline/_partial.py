"""Some variants now, the rest later (``benchlib run --variants``).

A recipe's variants may be run in parts: those named now, the others by a later run of the
same recipe, which resumes the folder. Three rules keep a run in parts the same as a run in
one go:

* a name the recipe lacks is refused before anything starts (exit 2 naming ``--variants``);
* a variant left out that already launched is held to the first variant as if it ran now:
  its stored probe (``02_launch``) goes through the same fairness check, in recipe order, so
  splitting a comparison cannot slip past it;
* the run-wide steps (``04_compare`` …) wait while a variant left out has never been
  attempted; one that was attempted and failed counts as a plain run counts it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from benchlib._exceptions import UsageError
from benchlib.pipeline._declare import RunFacts, Step
from benchlib.pipeline._sidecar import read_sidecar
from benchlib.recipe import Recipe
from benchlib.runs import RunFolder

__all__ = ["chosen_variants", "hold_stored_launch", "never_attempted"]


def chosen_variants(recipe: Recipe, names: Sequence[str] | None) -> set[str]:
    """The variants to run now: all of them, or ``names`` checked against the recipe's
    (exit 2 naming ``--variants``: a typo must not quietly run nothing)."""
    every = [name for name, _ in recipe.variant_recipes()] if recipe.variants else []
    if names is None:
        return set(every)
    unknown = [n for n in names if n not in every]
    if not recipe.variants or unknown or not names:
        known = ", ".join(every) if every else "none: the recipe has no variants"
        raise UsageError("--variants", f"no variant {', '.join(unknown) or '(empty)'} in "
                         f"{recipe.name}; its variants: {known}")
    return set(names)


def never_attempted(folder: RunFolder) -> bool:
    """Whether a variant's folder holds no attempt yet (no ``run.json``)."""
    return folder.read_state() is None


def hold_stored_launch(folder: RunFolder, steps: Sequence[Step[Any]],
                       gate: Callable[[RunFacts], None]) -> None:
    """Pass a variant's stored launch (each ``engine="start"`` step ok in ``folder``)
    through ``gate``, the fairness check the variant met when it ran."""
    facts = RunFacts()
    for step in steps:
        if step.engine != "start" or step.apply is None:
            continue
        sidecar = folder.sidecar(step.name)
        if not sidecar.is_file() or read_sidecar(sidecar).status != "ok":
            continue
        result = step.read_result(folder)
        if result is not None:
            facts = step.apply(result, facts)
            gate(facts)
