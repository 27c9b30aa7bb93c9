"""A run's figures under the keys references use, so 04_compare can set published results
(:mod:`benchlib.references`) beside them: each measurement's result keys, its per-user decode
rate, the engine's start-up time and per-request token means; each reference row also carries
the recipe's own caveats for its variant and scenario (what it assumed, where it differs)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchlib.accuracy import FewShotResult
from benchlib.pipeline.steps._spec_cost import decode_rates
from benchlib.recipe import Recipe, assumption_caveats
from benchlib.references import MeasuredKey, recipe_references, reference_table
from benchlib.runs import (
    STEP_LAUNCH,
    STEP_MEASURE,
    MeasureStep,
    RunFolder,
    figures,
    measurements,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["measured_figures", "references_table"]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _per_request(total: int | None, completed: int) -> float | None:
    return (total or 0) / completed if completed else None


def measured_figures(recipe: Recipe, run_dir: str | Path
                     ) -> dict[MeasuredKey, dict[str, float | None]]:
    """Every measurement of the run at ``run_dir``: (variant, scenario, concurrency) → its
    numeric result keys, ``per_user_tok_s``, ``mean_request_decode_rate`` (each request's own
    rate, then the mean), ``startup_s`` and the mean input and output tokens per successful
    request; a long-context ramp's reach at concurrency 1; SGLang's
    few_shot_gsm8k figures as the variant's run-wide ones, ``(variant, "", 0)``."""
    run = RunFolder(path=Path(run_dir))
    out: dict[MeasuredKey, dict[str, float | None]] = {}
    for name, _ in recipe.variant_recipes():
        folder = run.variant(name)
        launch = folder.result(STEP_LAUNCH)
        startup = launch.startup_s if launch else None
        measured = folder.result(STEP_MEASURE) or MeasureStep()
        for scenario, concurrency, m in measurements(measured):
            # every numeric figure a reference may name (the result keys, energy's too)
            numbers: dict[str, float | None] = {
                k: float(v) for k, v in figures(m).items()
                if _number(v) and isinstance(v, int | float)}
            numbers.update({
                "per_user_tok_s": m.per_user_tok_s, "startup_s": startup,
                "mean_input_tokens": _per_request(m.total_input_tokens, m.completed),
                "mean_output_tokens": _per_request(m.total_output_tokens, m.completed)})
            out[(name, scenario, concurrency)] = numbers
        for scenario, ramp in measured.ramps.items():
            out[(name, scenario, 1)] = {
                "max_completed_input_len": ramp.max_completed_input_len,
                "failed_at_input_len": ramp.failed_at_input_len, "startup_s": startup}
        few = measured.accuracy.get("few_shot_gsm8k")
        if isinstance(few, FewShotResult) and few.n:
            out[(name, "", 0)] = {"gsm8k_accuracy": few.accuracy,
                                  "gsm8k_invalid": few.invalid,
                                  "gsm8k_latency_s": few.latency_s,
                                  "gsm8k_output_throughput": few.output_throughput}
    # each request's own decode rate, then the mean (seed 003's speed), beside 1000 / TPOT
    for key, rate in decode_rates(recipe, run_dir).items():
        out.setdefault(key, {})["mean_request_decode_rate"] = rate
    return out


def references_table(recipe: Recipe, run_dir: str | Path) -> pd.DataFrame | None:
    """The recipe's references beside the run's figures; None when it names none."""
    if not recipe.compare.references:
        return None
    measured = measured_figures(recipe, run_dir) if str(run_dir) else {}
    table = reference_table(recipe_references(recipe), measured)
    # the recipe's own departures from its source (and what it assumed) shape the measured
    # figure of each row: they stand on the row beside the reference's caveats
    for i, row in table.iterrows():
        own = assumption_caveats(recipe.assumptions, str(row["variant"] or ""),
                                 str(row["scenario"] or ""))
        if own:
            table.at[i, "caveats"] = "; ".join(filter(None, [str(row["caveats"] or ""),
                                                            *own]))
    return table
