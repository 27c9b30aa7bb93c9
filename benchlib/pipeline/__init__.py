"""The notebook pipeline: one declared step per notebook (:mod:`benchlib.pipeline.steps`),
the run folder that holds a run (:class:`RunFolder`), the papermill runner and the
sidecars. Notebooks import this module as ``bp``."""

from benchlib.pipeline._chart import Chart
from benchlib.pipeline._declare import COMMON_PARAMS, Param, Step
from benchlib.pipeline._folder import RunFolder
from benchlib.pipeline._results import read_results, save_results
from benchlib.pipeline._runner import NOTEBOOKS, RunSummary, run_recipe
from benchlib.pipeline._sidecar import Sidecar, StepError, read_sidecar
from benchlib.pipeline._standalone import endpoint, load
from benchlib.pipeline.steps import step_table
from benchlib.pipeline.steps._summary import measure_figure, summary_table
from benchlib.pipeline.steps.compare import Compared, CompareResult, compare, compare_runs
from benchlib.pipeline.steps.download import DownloadResult, download_model
from benchlib.pipeline.steps.launch import LaunchResult, launch_summary, plan_vs_engine_table
from benchlib.pipeline.steps.measure import Measured, MeasureResult, measure_scenarios
from benchlib.pipeline.steps.plan import (
    PlanResult,
    plan_charts,
    plan_overview,
    plan_step,
    plan_table,
)
from benchlib.provenance import Provenance

__all__ = [
    "COMMON_PARAMS",
    "NOTEBOOKS",
    "Chart",
    "CompareResult",
    "Compared",
    "DownloadResult",
    "LaunchResult",
    "MeasureResult",
    "Measured",
    "Param",
    "PlanResult",
    "Provenance",
    "RunFolder",
    "RunSummary",
    "Sidecar",
    "Step",
    "StepError",
    "compare",
    "compare_runs",
    "download_model",
    "endpoint",
    "launch_summary",
    "load",
    "measure_figure",
    "measure_scenarios",
    "plan_charts",
    "plan_overview",
    "plan_step",
    "plan_table",
    "plan_vs_engine_table",
    "read_results",
    "read_sidecar",
    "run_recipe",
    "save_results",
    "step_table",
    "summary_table",
]
