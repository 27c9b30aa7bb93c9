"""What speculation costs in a comparison run: for every speculating variant and scenario
measured one request at a time, its verify step against its own engine's plain step
(:func:`benchlib.measure.spec_cost`), the break-even acceptance, the projections, and the
seed's way of stating speed (each request's own decode rate, then the mean) beside the
kit's. A published pair of figures for a variant and its baseline (the recipe's references)
becomes the tokens per step this GPU would need to match it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchlib.measure import (
    DecodeSteps,
    RequestRecord,
    SpecCost,
    decode_steps,
    read_requests,
    request_decode_rate,
    requests_path,
    spec_cost,
)
from benchlib.pipeline._chart import Chart
from benchlib.pipeline.steps._variants import baseline_of
from benchlib.recipe import Recipe
from benchlib.references import recipe_references
from benchlib.runs import STEP_MEASURE, Measurement, MeasureStep, RunFolder, measurements
from benchlib.runs._spec_cost_figure import spec_cost_figure as draw

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SPEC_COST_COLUMNS", "decode_rates", "spec_cost_figure", "spec_cost_rows",
           "spec_cost_table"]

SPEC_COST_COLUMNS = ["variant", "baseline", "scenario", "k", "step_ms", "steps", "server_steps",
                     "plain_step_ms", "cost_ratio", "breakeven_tokens_per_step",
                     "breakeven_acceptance_rate", "measured_tokens_per_step",
                     "ceiling_speedup", "published", "tokens_per_step_to_match"]


def _records(m: Measurement, folder: Path) -> list[RequestRecord]:
    path = requests_path(folder / m.result_json)
    return read_requests(path) if m.result_json and path.is_file() else []


def _single(measured: MeasureStep) -> dict[str, Measurement]:
    """Each scenario's measurement at concurrency 1: the only one whose steps are one
    request's."""
    return {s: m for s, c, m in measurements(measured) if c == 1}


def _steps(m: Measurement, folder: Path) -> DecodeSteps | None:
    spec = m.speculative
    accepted = (spec.accepted_tokens if spec is not None and spec.source is not None
                else None)
    return decode_steps(_records(m, folder), accepted=accepted)


def _published(recipe: Recipe, variant: str, baseline: str, scenario: str
               ) -> list[tuple[str, float]]:
    """Speedups the references publish for ``variant`` over ``baseline`` at ``scenario``:
    both per-user decode rates given, at concurrency 1."""
    if not recipe.compare.references:
        return []
    rates: dict[str, tuple[str, float]] = {}
    for ref, figures in recipe_references(recipe):
        if ref.scenario == scenario and ref.variant in (variant, baseline) and (
                ref.concurrency in (None, 1)) and "per_user_tok_s" in figures:
            rates[ref.variant] = (ref.name, figures["per_user_tok_s"])
    if variant in rates and baseline in rates:
        (name, mine), (_, theirs) = rates[variant], rates[baseline]
        return [(f"published {name}", mine / theirs)]
    return []


def spec_cost_rows(recipe: Recipe, run_dir: str | Path) -> list[SpecCost]:
    """Every speculating variant's cost against its baseline, scenario by scenario (those
    both measured at concurrency 1)."""
    run = RunFolder(path=Path(run_dir))
    pairs = recipe.variant_recipes()
    by_name = dict(pairs)
    out: list[SpecCost] = []
    for name, variant in pairs:
        base = baseline_of(by_name, name)
        k = variant.engine.speculative.k
        if base is None or not k:
            continue
        mine_dir, base_dir = run.variant(name).path, run.variant(base).path
        mine = _single(run.variant(name).result(STEP_MEASURE) or MeasureStep())
        theirs = _single(run.variant(base).result(STEP_MEASURE) or MeasureStep())
        for scenario in (s for s in mine if s in theirs):
            spec, plain = _steps(mine[scenario], mine_dir), _steps(theirs[scenario], base_dir)
            if spec is None or plain is None:
                continue
            out.append(spec_cost(name, base, scenario, k, spec, plain,
                                 _published(recipe, name, base, scenario)))
    return out


def spec_cost_table(recipe: Recipe, run_dir: str | Path) -> pd.DataFrame:
    """:func:`spec_cost_rows` as a table, a published speedup's τ-to-match beside it."""
    import pandas as pd

    rows = []
    for c in spec_cost_rows(recipe, run_dir):
        matched = [p for p in c.projections if p.label.startswith("to match")]
        rows.append({**{k: getattr(c, k) for k in SPEC_COST_COLUMNS if hasattr(c, k)},
                     "published": matched[0].speedup if matched else None,
                     "tokens_per_step_to_match": (matched[0].tokens_per_step if matched
                                                  else None)})
    return pd.DataFrame(rows, columns=SPEC_COST_COLUMNS)


def decode_rates(recipe: Recipe, run_dir: str | Path) -> dict[tuple[str, str, int], float]:
    """(variant, scenario, concurrency) → the mean of each request's own decode rate
    (tok/s): seed 003's figure, beside the kit's 1000 / median TPOT."""
    run = RunFolder(path=Path(run_dir))
    out: dict[tuple[str, str, int], float] = {}
    for name, _ in recipe.variant_recipes():
        folder = run.variant(name)
        for scenario, concurrency, m in measurements(
                folder.result(STEP_MEASURE) or MeasureStep()):
            rate = request_decode_rate(_records(m, folder.path))
            if rate is not None:
                out[(name, scenario, concurrency)] = rate
    return out


def spec_cost_figure(rows: list[SpecCost], save_to: str | Path = "") -> Chart | None:
    """:func:`~benchlib.runs._spec_cost_figure.spec_cost_figure` as 04_compare's chart
    (``spec_cost.png``); None without a row."""
    fig = draw(rows)
    return None if fig is None else Chart.finish(fig, fig.axes, save_to)
