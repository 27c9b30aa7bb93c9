"""A run folder read typed, once, for the report: the recipe, and per variant its launch,
plan and measurements as their step models (:mod:`benchlib.runs`), its provenance, and the
run's comparison and SLO searches. The report's sections read these fields; the write-up's
names (:func:`~benchlib.report.report_context`) are built from them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from benchlib._exceptions import UsageError
from benchlib.recipe import Recipe
from benchlib.runs import (
    STEP_COMPARE,
    STEP_LAUNCH,
    STEP_MEASURE,
    STEP_PLAN,
    CompareResult,
    LaunchResult,
    Measurement,
    MeasureStep,
    PlanResult,
    RunFolder,
    measurements,
)
from benchlib.sweep import SweepSummary, run_sweeps

__all__ = ["RunView", "VariantView", "read_run"]


@dataclass(frozen=True)
class VariantView:
    """One variant of the run (the run itself, ``name == ""``, for a recipe without)."""

    name: str
    recipe: Recipe
    launch: LaunchResult | None
    plan: PlanResult | None
    measured: MeasureStep
    #: the measure (else launch) step's sidecar provenance, as written: a JSON boundary
    #: (benchlib.provenance.Provenance of whichever kit version wrote it)
    provenance: dict[str, JsonValue]

    @property
    def label(self) -> str:
        """How the report names it: the variant, or ``run``."""
        return self.name or "run"


@dataclass(frozen=True)
class RunView:
    """The run folder, typed."""

    folder: RunFolder
    recipe: Recipe
    #: recipe.json as written, for the write-up to cite (a JSON boundary: the template's)
    recipe_json: dict[str, JsonValue]
    variants: list[VariantView]
    compare: CompareResult | None
    sweeps: list[tuple[str, SweepSummary]]

    def measurements(self) -> Iterator[tuple[VariantView, str, int, Measurement]]:
        """``(variant, scenario, concurrency, measurement)`` of every measurement, variants
        in the recipe's order."""
        for v in self.variants:
            for scenario, conc, m in measurements(v.measured):
                yield v, scenario, conc, m


def _json(path: Path) -> dict[str, JsonValue]:
    """A JSON object from ``path``; ``{}`` when there is none."""
    if not path.is_file():
        return {}
    data: dict[str, JsonValue] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _provenance(folder: RunFolder) -> dict[str, JsonValue]:
    for step in (STEP_MEASURE, STEP_LAUNCH):
        prov = _json(folder.sidecar(step)).get("provenance")
        if isinstance(prov, dict) and prov:
            return prov
    return {}


def read_run(run_dir: str | Path) -> RunView:
    """Everything the run folder at ``run_dir`` holds that the report shows."""
    run = RunFolder(path=Path(run_dir))
    recipe_json = _json(run.recipe_json)
    if not recipe_json:
        raise UsageError(str(run_dir), f"no {run.recipe_json.name}: not a run folder")
    recipe = Recipe.model_validate(recipe_json)
    variants = []
    for name in [v.name for v in recipe.variants] or [""]:
        folder = run.variant(name)
        sub = _json(folder.recipe_json) if name else {}
        variants.append(VariantView(
            name=name, recipe=Recipe.model_validate(sub) if sub else recipe,
            launch=folder.result(STEP_LAUNCH), plan=folder.result(STEP_PLAN),
            measured=folder.result(STEP_MEASURE) or MeasureStep(),
            provenance=_provenance(folder)))
    return RunView(folder=run, recipe=recipe, recipe_json=recipe_json, variants=variants,
                   compare=run.result(STEP_COMPARE), sweeps=run_sweeps(run.path))
