"""The notebook pipeline: steps the notebooks call, the papermill runner, the sidecars."""

from benchlib.pipeline._runner import NOTEBOOKS, RunSummary, run_recipe
from benchlib.pipeline._sidecar import Provenance, Sidecar, StepError, read_sidecar
from benchlib.pipeline._steps import (
    compare_runs,
    download_model,
    launch_summary,
    load,
    measure_figure,
    measure_scenarios,
    plan_charts,
    plan_overview,
    plan_step,
    plan_table,
    save_results,
    summary_table,
)

__all__ = [
    "NOTEBOOKS",
    "Provenance",
    "RunSummary",
    "Sidecar",
    "StepError",
    "compare_runs",
    "download_model",
    "launch_summary",
    "load",
    "measure_figure",
    "measure_scenarios",
    "plan_charts",
    "plan_overview",
    "plan_step",
    "plan_table",
    "read_sidecar",
    "run_recipe",
    "save_results",
    "summary_table",
]
