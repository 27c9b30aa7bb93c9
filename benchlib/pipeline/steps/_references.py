"""A run's figures under the keys references use, so 04_compare can set published results
(:mod:`benchlib.references`) beside them: each measurement's result keys, its per-user decode
rate, the engine's start-up time and per-request token means."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib.pipeline._folder import RunFolder
from benchlib.pipeline._results import read_results
from benchlib.pipeline.steps._summary import measurements
from benchlib.recipe import Recipe
from benchlib.references import MeasuredKey, recipe_references, reference_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["measured_figures", "references_table"]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def measured_figures(recipe: Recipe, run_dir: str | Path
                     ) -> dict[MeasuredKey, dict[str, float | None]]:
    """Every measurement of the run at ``run_dir``: (variant, scenario, concurrency) → its
    numeric result keys, ``per_user_tok_s``, ``startup_s`` and the mean input and output
    tokens per successful request; a long-context ramp's reach at concurrency 1; SGLang's
    few_shot_gsm8k figures as the variant's run-wide ones, ``(variant, "", 0)``."""
    run = RunFolder(path=Path(run_dir))
    out: dict[MeasuredKey, dict[str, float | None]] = {}
    for name, _ in recipe.variant_recipes():
        folder = run.variant(name)
        startup = read_results(folder.results("02_launch")).get("startup_s")
        for scenario, concurrency, result in measurements(
                read_results(folder.results("03_measure"))):
            figures: dict[str, float | None] = {k: float(v) for k, v in result.items()
                                                if _number(v)}
            completed = result.get("completed") or 0
            figures.update({
                "per_user_tok_s": result["per_user_tok_s"],
                "startup_s": startup if _number(startup) else None,
                "mean_input_tokens": (result.get("total_input_tokens") or 0) / completed
                if completed else None,
                "mean_output_tokens": (result.get("total_output_tokens") or 0) / completed
                if completed else None})
            out[(name, scenario, concurrency)] = figures
        measured = read_results(folder.results("03_measure"))
        for key, record in measured.items():
            if key.endswith("/ramp") and isinstance(record, dict):
                out[(name, key.rsplit("/", 1)[0], 1)] = {
                    "max_completed_input_len": record.get("max_completed_input_len"),
                    "failed_at_input_len": record.get("failed_at_input_len"),
                    "startup_s": startup if _number(startup) else None}
        few = measured.get("accuracy/few_shot_gsm8k")
        if isinstance(few, dict) and few.get("n"):
            out[(name, "", 0)] = {"gsm8k_accuracy": few.get("accuracy"),
                                  "gsm8k_invalid": few.get("invalid"),
                                  "gsm8k_latency_s": few.get("latency_s"),
                                  "gsm8k_output_throughput": few.get("output_throughput")}
    return out


def references_table(recipe: Recipe, run_dir: str | Path) -> pd.DataFrame | None:
    """The recipe's references beside the run's figures; None when it names none."""
    if not recipe.compare.references:
        return None
    measured = measured_figures(recipe, run_dir) if str(run_dir) else {}
    return reference_table(recipe_references(recipe), measured)
