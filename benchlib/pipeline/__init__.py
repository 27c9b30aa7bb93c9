"""The notebook pipeline: one declared step per notebook (:mod:`benchlib.pipeline.steps`),
the run folder that holds a run (:class:`RunFolder`), the papermill runner and the
sidecars. Notebooks import this module as ``bp``; the run folder and the steps' typed
results live a layer below, in :mod:`benchlib.runs`, and are re-exported here."""

from benchlib.pipeline._chart import Chart
from benchlib.pipeline._declare import COMMON_PARAMS, Param, Step
from benchlib.pipeline._runner import NOTEBOOKS, RunSummary, run_recipe
from benchlib.pipeline._sidecar import Sidecar, StepError, read_sidecar
from benchlib.pipeline._standalone import endpoint, load
from benchlib.pipeline.steps import step_table
from benchlib.pipeline.steps._summary import measure_figure
from benchlib.pipeline.steps.compare import Compared, compare, compare_runs
from benchlib.pipeline.steps.download import download_model
from benchlib.pipeline.steps.launch import launch_summary, plan_vs_engine_table
from benchlib.pipeline.steps.measure import Measured, measure_scenarios
from benchlib.pipeline.steps.plan import (
    plan_charts,
    plan_overview,
    plan_step,
    plan_table,
)
from benchlib.provenance import Provenance
from benchlib.runs import (
    CompareResult,
    DownloadResult,
    LaunchResult,
    Measurement,
    MeasureStep,
    PlanResult,
    RunFolder,
    read_results,
    save_results,
    summary_table,
)

__all__ = [
    "COMMON_PARAMS",
    "NOTEBOOKS",
    "Chart",
    "CompareResult",
    "Compared",
    "DownloadResult",
    "LaunchResult",
    "MeasureStep",
    "Measured",
    "Measurement",
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
