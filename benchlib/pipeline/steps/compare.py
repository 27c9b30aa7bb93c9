"""``04_compare``: a recipe with variants opens with the run at a glance, the same headline
table and figure its report opens with (:mod:`benchlib.runs._glance`); then this run's
measurements beside other runs', and every provenance
difference between them flagged (:mod:`benchlib.provenance._compare`); the recipe's
published references (``compare.references``) beside the run's own figures. On its own, the
notebook compares every run of the recipe found under ``outputs/`` (``benchlib run``'s and
the notebooks' own). A run folder holding SLO searches (``benchlib sweep --output-dir
RUN/sweep/NAME``) gets their curves, knee marked, and a row per search."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import JsonValue

from benchlib._exceptions import UsageError
from benchlib.measure import SpecCost
from benchlib.pipeline._chart import Chart
from benchlib.pipeline._declare import Param, Step, StepInputs
from benchlib.pipeline._sidecar import Params
from benchlib.pipeline._standalone import outputs, results_file, scratch_outputs, step_folder
from benchlib.pipeline.steps._references import references_table
from benchlib.pipeline.steps._significance import add_speedup_intervals, significance_table
from benchlib.pipeline.steps._spec_cost import spec_cost_figure, spec_cost_rows
from benchlib.pipeline.steps._variants import variants_figure, variants_table
from benchlib.provenance import compare_provenance
from benchlib.recipe import Recipe
from benchlib.runs import (
    STEP_COMPARE,
    STEP_MEASURE,
    CompareResult,
    MeasureStep,
    ReferenceRow,
    RunFolder,
    SignificanceRow,
    SweepRow,
    VariantRow,
    save_results,
    summary_table,
)
from benchlib.sweep import run_sweeps, sweep_figure, sweep_row

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["STEP", "Compared", "compare", "compare_runs", "headline_table"]



@dataclass(frozen=True)
class Compared:
    """Runs side by side: their measurements, and their provenance (``differs`` flagged)."""

    table: pd.DataFrame
    provenance: pd.DataFrame
    variants: pd.DataFrame | None = None
    figure: Chart | None = None
    references: pd.DataFrame | None = None
    sweeps: pd.DataFrame | None = None
    sweep_figure: Chart | None = None
    significance: pd.DataFrame | None = None
    spec_cost: pd.DataFrame | None = None
    spec_cost_figure: Chart | None = None
    #: the report's headline table: variants × scenarios (report._glance)
    headline: pd.DataFrame | None = None


def _measured(run: Path) -> tuple[MeasureStep, dict[str, JsonValue]]:
    """A run's measure results and provenance: from its measure sidecar, else (a notebook's
    own run folder) from its results file, with no provenance but whether it is synthetic
    (read from the results: a scripted server marks every answer)."""
    folder = RunFolder(path=run)
    sidecar = folder.sidecar(STEP_MEASURE)
    prov: dict[str, JsonValue] = {}
    if sidecar.is_file():
        data = json.loads(sidecar.read_text(encoding="utf-8"))
        results = MeasureStep.model_validate(data.get("results") or {})
        prov = data.get("provenance") or {}  # a JSON boundary: compare_provenance reads JSON
    else:
        results = folder.result(STEP_MEASURE) or MeasureStep()
        if not results.measurements and not results.ramps and not results.accuracy:
            raise UsageError("compare.runs", f"{run} has no {sidecar.name} sidecar")
    if prov.get("synthetic") is None:
        prov = {**prov, "synthetic": results.synthetic}
    return results, prov


def _records(table: pd.DataFrame | None) -> list[JsonValue]:
    """A table's rows as JSON (the result models validate them)."""
    return [] if table is None else list(json.loads(table.to_json(orient="records")))


def compare_runs(run_dirs: Sequence[str | Path], results_path: str | Path = "",
                 variants: pd.DataFrame | None = None,
                 references: pd.DataFrame | None = None,
                 sweeps: pd.DataFrame | None = None,
                 significance: pd.DataFrame | None = None,
                 spec_cost: Sequence[SpecCost] = ()
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Measure results of several runs side by side, and their provenance with every
    difference flagged. Each run folder must hold measure results."""
    import pandas as pd

    tables = []
    provenance: dict[str, dict[str, JsonValue]] = {}
    synthetic: list[str] = []
    for run in run_dirs:
        results, prov = _measured(Path(run))
        where = Path(run).resolve()  # the runner passes its own folder as "."
        label = f"{where.parent.name}/{where.name}"
        if prov.get("synthetic"):
            label += " (synthetic)"
            synthetic.append(str(run))
        t = summary_table(results)
        t.insert(0, "run", label)
        tables.append(t)
        provenance[label] = prov
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    prov_table = compare_provenance(provenance)
    differences = [] if prov_table.empty else prov_table.index[prov_table["differs"]].tolist()
    if synthetic:
        print(f"SYNTHETIC: {len(synthetic)} of {len(run_dirs)} compared runs were answered by "
              "benchlib's scripted server (canned timings, no engine), labelled "
              "'(synthetic)': their figures test the kit, they measure no engine", flush=True)
    save_results(results_path, CompareResult(
        runs=[str(r) for r in run_dirs], synthetic_runs=synthetic,
        provenance_differences=differences,
        variants=[VariantRow.model_validate(r) for r in _records(variants)],
        references=[ReferenceRow.model_validate(r) for r in _records(references)],
        sweeps=[SweepRow.model_validate(r) for r in _records(sweeps)],
        significance=[SignificanceRow.model_validate(r) for r in _records(significance)],
        spec_cost=list(spec_cost)))
    return table, prov_table


def _cost_frame(costs: Sequence[SpecCost]) -> pd.DataFrame | None:
    """The costs as a table (a projection's τ-to-match beside each); None without one."""
    import pandas as pd

    if not costs:
        return None
    return pd.DataFrame([{**c.model_dump(exclude={"projections", "formula"}),
                          "to_match": "; ".join(f"{p.label}: τ {p.tokens_per_step:.2f}"
                                                for p in c.projections
                                                if p.label.startswith("to match"))}
                         for c in costs])


def headline_table(table: pd.DataFrame) -> pd.DataFrame:
    """The variants table as the report's first screen shows it: a row per variant, per
    scenario its per-user tok/s, total tok/s, TTFT and speculation's speedup (with its
    interval and significance), each header naming the concurrency it is read at."""
    import pandas as pd

    from benchlib.runs._glance import cell_texts, glance, headers

    rows = [r for r in _records(table) if isinstance(r, dict)]
    g = glance(rows)
    columns = ["variant", "engine", "speculative",
               *(f"{s.name}: {h}" for s in g.scenarios for h in headers(g, s))]
    return pd.DataFrame([[v.name, v.engine, v.speculative or "off",
                          *(t for s in g.scenarios for t in cell_texts(g, v.cells.get(s.name)))]
                         for v in g.variants], columns=columns)


def _has_measurements(run: Path) -> bool:
    """Whether a run folder measured anything (a start-only run did not)."""
    folder = RunFolder(path=run)
    return folder.sidecar(STEP_MEASURE).is_file() or folder.results(STEP_MEASURE).is_file()


def _runs_of(recipe: Recipe) -> list[Path]:
    """Every run of the recipe with measurements, ``benchlib run``'s and the notebooks'."""
    found = [*RunFolder.runs_of(outputs(), recipe.name),
             *RunFolder.runs_of(scratch_outputs(), recipe.name)]
    return [f.path for f in found if _has_measurements(f.path)]


def _sweeps(run_dir: str | Path) -> tuple[pd.DataFrame | None, Chart | None]:
    """The SLO searches kept in ``run_dir`` (none: ``(None, None)``): a row each, and their
    curves with the knee marked, saved as ``sweep.png`` beside them."""
    import pandas as pd

    found = run_sweeps(run_dir) if str(run_dir) else []
    if not found:
        return None, None
    chart = Chart(sweep_figure(found))
    chart.save(Path(run_dir) / "sweep" / "sweep.png")
    return pd.DataFrame([sweep_row(name, s) for name, s in found]), chart


def compare(recipe: Recipe, *, run_dir: str | Path = "", other_runs: Sequence[str] = (),
            results_path: str | Path = "") -> Compared:
    """``run_dir`` beside ``other_runs``; with no ``run_dir``, every run of the recipe. A
    recipe with variants: the variants of ``run_dir`` (else of the recipe's newest run)
    side by side, with caveats, speedups and the Pareto chart (``variants.png``)."""
    if recipe.variants:
        if not str(run_dir):
            found = RunFolder.runs_of(outputs(), recipe.name)
            run_dir = found[-1].path if found else ""
        table = variants_table(recipe, run_dir) if str(run_dir) else None
        if table is not None:
            add_speedup_intervals(table, recipe, run_dir)
        significance = significance_table(recipe, run_dir)
        figure = variants_figure(table, save_to=Path(run_dir) / "variants.png") \
            if table is not None else None
        runs = [RunFolder(path=Path(run_dir)).variant(v.name).path for v in recipe.variants
                if str(run_dir)]
        runs = [r for r in runs if RunFolder(path=r).results(STEP_MEASURE).is_file()]
        runs += [Path(r) for r in other_runs]
        folder = step_folder(run_dir, recipe, scratch=False)
        refs = references_table(recipe, run_dir)
        sweeps, curves = _sweeps(run_dir)
        costs = spec_cost_rows(recipe, run_dir) if str(run_dir) else []
        table_all, provenance = compare_runs(runs, results_file(results_path, folder,
                                                                STEP.name), variants=table,
                                             references=refs, sweeps=sweeps,
                                             significance=significance, spec_cost=costs)
        return Compared(table=table_all, provenance=provenance, variants=table,
                        figure=figure, references=refs, sweeps=sweeps, sweep_figure=curves,
                        significance=significance, spec_cost=_cost_frame(costs),
                        spec_cost_figure=spec_cost_figure(
                            costs, save_to=Path(run_dir) / "spec_cost.png"),
                        headline=None if table is None else headline_table(table))
    own = [Path(run_dir)] if str(run_dir) and _has_measurements(Path(run_dir)) else []
    runs = [*own, *map(Path, other_runs)] if str(run_dir) else [
        *_runs_of(recipe), *map(Path, other_runs)]
    if not runs:
        print(f"no runs of {recipe.name} with measurements yet under {outputs()}: run "
              "03_measure or `benchlib run` first", flush=True)
    folder = step_folder(run_dir, recipe, scratch=False)
    refs = references_table(recipe, run_dir)
    sweeps, curves = _sweeps(run_dir)
    table, provenance = compare_runs(runs, results_file(results_path, folder, STEP.name),
                                     references=refs, sweeps=sweeps)
    return Compared(table=table, provenance=provenance, references=refs, sweeps=sweeps,
                    sweep_figure=curves)


def _bind(inputs: StepInputs) -> Params:
    return {"other_runs": [str(r) for r in inputs.recipe.compare.runs]}


STEP = Step[CompareResult](
    name=STEP_COMPARE.name, title="04 · Compare",
    about="A recipe with variants opens with the report's headline: the table (per variant "
          "and scenario: per-user tok/s, total tok/s, TTFT, speculation's speedup over its "
          "own engine without it, with its interval) and the Pareto chart. Then this run "
          "beside the recipe's `compare.runs`, and every provenance difference "
          "flagged (`differs`); a recipe with variants sets them side by side (startup, TTFT, "
          "TPOT, tokens per chunk against the server's acceptance, speedup over no "
          "speculation with its 95 % interval, declared differences as caveats) with the Pareto "
          "chart, what speculation costs per engine step (its verify step against the "
          "engine's own plain step, the break-even acceptance and the speedup at any tokens "
          "per step, labelled projections), and each variant's headline figures over the "
          "first variant's with bootstrap 95 % intervals, called significant only when the "
          "interval excludes 1; published "
          "references (`compare.references`) beside the run's own figures, with their "
          "caveats; SLO searches kept in the run folder (`benchlib sweep --output-dir "
          "RUN/sweep/NAME`) as their curves with the knee marked. On its own, "
          "the notebook compares every run of the recipe under `outputs/`.",
    params=(Param(name="other_runs", type="list[str]", default=[],
                  help="run folders to set beside this one"),),
    scope="run",
    result=CompareResult,
    cells=("compared = bp.compare(recipe, run_dir=run_dir, other_runs=other_runs,\n"
           "                      results_path=results_path)\ncompared.headline",
           "compared.figure",
           "compared.table",
           "compared.provenance",
           "compared.variants",
           "compared.significance",
           "compared.spec_cost",
           "compared.spec_cost_figure",
           "compared.references",
           "compared.sweeps",
           "compared.sweep_figure"),
    bind=_bind)
