"""``04_compare``: this run's measurements beside other runs', and every provenance
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
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from benchlib._exceptions import UsageError
from benchlib.pipeline._chart import Chart
from benchlib.pipeline._declare import Param, Step, StepInputs
from benchlib.pipeline._folder import RunFolder
from benchlib.pipeline._results import read_results, save_results, synthetic_results
from benchlib.pipeline._standalone import outputs, results_file, scratch_outputs, step_folder
from benchlib.pipeline.steps import measure
from benchlib.pipeline.steps._references import references_table
from benchlib.pipeline.steps._significance import add_speedup_intervals, significance_table
from benchlib.pipeline.steps._summary import summary_table
from benchlib.pipeline.steps._variants import variants_figure, variants_table
from benchlib.provenance import compare_provenance
from benchlib.recipe import Recipe
from benchlib.sweep import run_sweeps, sweep_figure, sweep_row

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["STEP", "CompareResult", "Compared", "compare", "compare_runs"]


class CompareResult(BaseModel):
    """04_compare's results."""

    runs: list[str] = Field(description="the run folders compared, this run first")
    provenance_differences: list[str] = Field(description="the provenance facts that differ")
    variants: list[dict[str, Any]] = Field(
        default_factory=list, description="a comparison run's variants side by side: one "
        "row per variant × scenario × concurrency (steps._variants.VARIANT_COLUMNS)")
    references: list[dict[str, Any]] = Field(
        default_factory=list, description="published figures beside the run's: one row per "
        "figure (benchlib.references.REFERENCE_COLUMNS)")
    significance: list[dict[str, Any]] = Field(
        default_factory=list, description="each variant's headline figures over the first "
        "variant's, with bootstrap 95 % intervals and a verdict (significant only when the "
        "interval excludes 1): one row per variant × scenario × concurrency × figure "
        "(steps._significance.SIGNIFICANCE_COLUMNS)")
    sweeps: list[dict[str, Any]] = Field(
        default_factory=list, description="the run folder's SLO searches (RUN/sweep/…): one "
        "row per search, its knee and what failed one step past it (benchlib.sweep.sweep_row)")
    synthetic_runs: list[str] = Field(
        default_factory=list, description="the compared runs measured on benchlib's scripted "
        "server (canned timings, no engine): shown apart, labelled '(synthetic)'")


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


def _measured(run: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run's measure results and provenance: from its measure sidecar, else (a notebook's
    own run folder) from its results file, with no provenance but whether it is synthetic
    (read from the results: a scripted server marks every answer)."""
    folder = RunFolder(path=run)
    sidecar = folder.sidecar(measure.STEP.name)
    if sidecar.is_file():
        data = json.loads(sidecar.read_text(encoding="utf-8"))
        results, prov = data.get("results", {}), data.get("provenance", {})
    else:
        results, prov = read_results(folder.results(measure.STEP.name)), {}
        if not results:
            raise UsageError("compare.runs", f"{run} has no {sidecar.name} sidecar")
    if prov.get("synthetic") is None:
        prov = {**prov, "synthetic": synthetic_results(results)}
    return results, prov


def _records(table: pd.DataFrame | None) -> list[dict[str, Any]]:
    return [] if table is None else list(json.loads(table.to_json(orient="records")))


def compare_runs(run_dirs: Sequence[str | Path], results_path: str | Path = "",
                 variants: pd.DataFrame | None = None,
                 references: pd.DataFrame | None = None,
                 sweeps: pd.DataFrame | None = None,
                 significance: pd.DataFrame | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Measure results of several runs side by side, and their provenance with every
    difference flagged. Each run folder must hold measure results."""
    import pandas as pd

    tables = []
    provenance: dict[str, dict[str, Any]] = {}
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
    save_results(results_path, CompareResult(runs=[str(r) for r in run_dirs],
                                             synthetic_runs=synthetic,
                                             provenance_differences=differences,
                                             variants=_records(variants),
                                             references=_records(references),
                                             sweeps=_records(sweeps),
                                             significance=_records(significance)))
    return table, prov_table


def _has_measurements(run: Path) -> bool:
    """Whether a run folder measured anything (a start-only run did not)."""
    folder = RunFolder(path=run)
    return (folder.sidecar(measure.STEP.name).is_file()
            or folder.results(measure.STEP.name).is_file())


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
        runs = [r for r in runs if RunFolder(path=r).results(measure.STEP.name).is_file()]
        runs += [Path(r) for r in other_runs]
        folder = step_folder(run_dir, recipe, scratch=False)
        refs = references_table(recipe, run_dir)
        sweeps, curves = _sweeps(run_dir)
        table_all, provenance = compare_runs(runs, results_file(results_path, folder,
                                                                STEP.name), variants=table,
                                             references=refs, sweeps=sweeps,
                                             significance=significance)
        return Compared(table=table_all, provenance=provenance, variants=table,
                        figure=figure, references=refs, sweeps=sweeps, sweep_figure=curves,
                        significance=significance)
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


def _bind(inputs: StepInputs) -> dict[str, Any]:
    return {"other_runs": [str(r) for r in inputs.recipe.compare.runs]}


STEP = Step[CompareResult](
    name="04_compare", title="04 · Compare",
    about="This run beside the recipe's `compare.runs`, and every provenance difference "
          "flagged (`differs`); a recipe with variants sets them side by side (startup, TTFT, "
          "TPOT, tokens per chunk against the server's acceptance, speedup over no "
          "speculation with its 95 % interval, declared differences as caveats) with the Pareto "
          "chart, and each variant's headline figures over the first variant's with "
          "bootstrap 95 % intervals, called significant only when the interval excludes 1; "
          "published "
          "references (`compare.references`) beside the run's own figures, with their "
          "caveats; SLO searches kept in the run folder (`benchlib sweep --output-dir "
          "RUN/sweep/NAME`) as their curves with the knee marked. On its own, "
          "the notebook compares every run of the recipe under `outputs/`.",
    params=(Param(name="other_runs", type="list[str]", default=[],
                  help="run folders to set beside this one"),),
    scope="run",
    result=CompareResult,
    cells=("compared = bp.compare(recipe, run_dir=run_dir, other_runs=other_runs,\n"
           "                      results_path=results_path)\ncompared.table",
           "compared.provenance",
           "compared.variants",
           "compared.significance",
           "compared.figure",
           "compared.references",
           "compared.sweeps",
           "compared.sweep_figure"),
    bind=_bind)
