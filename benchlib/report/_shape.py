"""The names a recipe's run will have, before it runs: so ``benchlib run --check`` can refuse a
write-up skeleton that cites a variant, scenario, concurrency or figure the recipe never
measures (the render after a long run is the wrong time to learn of a typo).

:func:`shape_context` builds the report context's skeleton from the recipe alone: every
variant × scenario × concurrency with every result key a measurement carries (and the
aliases), the references' names and figures, the accuracy task's keys. Plan, provenance,
compare, takeaway, glance and sweeps (SLO searches a user adds to the folder) are free-form
here (what they hold depends on the machine and the engine): any name
under them passes.
"""

from __future__ import annotations

from benchlib.accuracy import AccuracyResult, FewShotResult
from benchlib.measure import MeasureResult
from benchlib.recipe import Recipe
from benchlib.references import Reference, recipe_references
from benchlib.report._context import ALIASES, VARIANT_FACTS, Context, _with_underscores
from benchlib.runs import ENERGY_FIGURES, Measurement, ReferenceRow

__all__ = ["Anything", "shape_context"]


class Anything(dict[str, object]):
    """Any key or attribute, to any depth: what a free-form part of the context may hold."""

    def __getattr__(self, name: str) -> Anything:
        return Anything()

    def __missing__(self, key: str) -> Anything:
        return Anything()

    def __str__(self) -> str:
        return "…"


def _figures() -> dict[str, float]:
    """A measurement's names: the result's keys (:class:`~benchlib.measure.MeasureResult`),
    the step's record's (:class:`~benchlib.runs.Measurement`), and what the report adds."""
    keys = [*MeasureResult.model_fields, *Measurement.model_fields, "per_user_tok_s",
            *ENERGY_FIGURES, *ALIASES]
    return {k: 1.0 for k in keys}


def shape_context(recipe: Recipe,
                  references: list[tuple[Reference, dict[str, float]]] | None = None
                  ) -> Context:
    """The context a complete run of ``recipe`` renders against, numbers all 1.0;
    ``references``: the recipe's, when the caller has read them already
    (:func:`~benchlib.references.recipe_references`)."""
    variants: dict[str, object] = {}
    for name, sub in recipe.variant_recipes():
        scenarios = {s.name: {f"c{c}": _figures() for c in s.concurrencies}
                     for s in sub.scenarios if not s.ramp_input_lens}
        facts: dict[str, object] = {
            "engine": sub.engine.kind, "speculative": sub.engine.speculative.label,
            "model": sub.model.id, "checkpoint_format": sub.model.format, "startup_s": 1.0,
            "log_facts": Anything(), "plan_vs_engine": Anything()}
        assert tuple(facts) == VARIANT_FACTS, "the shape of a variant is the context's"
        variants[name] = _with_underscores({**facts, **scenarios})
    names = list(variants)
    if references is None:
        references = recipe_references(recipe)
    published = {ref.name: {**dict.fromkeys(ReferenceRow.FACTS, "…"), **figures}
                 for ref, figures in references}
    fields = (FewShotResult if recipe.accuracy and recipe.accuracy.task == "few_shot_gsm8k"
              else AccuracyResult).model_fields
    accuracy = ({n: {recipe.accuracy.task: dict.fromkeys(fields, 1.0)}
                 for n in names} if recipe.accuracy else {})
    return {"recipe": recipe.model_dump(mode="json"), "variants": _with_underscores(variants),
            "run": variants[names[0]] if names == [""] else {},
            "plan": Anything(), "provenance": Anything(), "compare": Anything(),
            "references": _with_underscores(published),
            "accuracy": _with_underscores(accuracy), "sweeps": Anything(),
            "takeaway": Anything(), "glance": Anything(), "recipe_path": "RECIPE.yaml"}
