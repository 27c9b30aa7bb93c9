"""A run's folder and what its steps leave in it, typed — below both the pipeline that
writes a run and the report that reads one.

* :class:`RunFolder` (:mod:`._folder`): where every file of a run lies;
  :meth:`RunFolder.result` reads a step's results into its model.
* The steps' names, once (:mod:`._keys`): ``STEP_PLAN`` … ``STEP_COMPARE``, each a
  :class:`StepKey` tied to its result model.
* The result models: :class:`PlanResult`, :class:`DownloadResult`, :class:`LaunchResult`,
  :class:`MeasureStep` (one :class:`Measurement` per scenario and concurrency) and
  :class:`CompareResult`.
* Result I/O (:mod:`._io`), the measure step's summary table (:mod:`._summary`) and
  paths as a run folder records them (:mod:`._paths`).
"""

from benchlib.runs._folder import RunFolder, RunState
from benchlib.runs._io import read_results, save_results, synthetic_results, whole, write_atomic
from benchlib.runs._keys import (
    STEP_COMPARE,
    STEP_DOWNLOAD,
    STEP_KEYS,
    STEP_LAUNCH,
    STEP_MEASURE,
    STEP_PLAN,
    StepKey,
)
from benchlib.runs._launch import (
    FLAG_PCT,
    EngineVsPlan,
    LaunchResult,
    PlanFigure,
    Probe,
    planned_capacity,
)
from benchlib.runs._measure import (
    AccuracyFailed,
    EngineLost,
    KvVsPlan,
    Measurement,
    MeasureStep,
    Ramp,
    RampStep,
    ServerSide,
    SpeculativeSide,
    TimingSide,
)
from benchlib.runs._models import (
    CompareResult,
    DownloadResult,
    PlanNumbers,
    PlanResult,
    PlanRow,
    ReferenceRow,
    SignificanceRow,
    SweepRow,
    VariantRow,
)
from benchlib.runs._paths import (
    kit_root,
    load_recipe_snapshot,
    portable,
    portable_recipe,
    relative_text,
)
from benchlib.runs._summary import (
    ENERGY_FIGURES,
    TABLE_COLUMNS,
    figures,
    measurements,
    summary_table,
)

__all__ = [
    "ENERGY_FIGURES",
    "FLAG_PCT",
    "STEP_COMPARE",
    "STEP_DOWNLOAD",
    "STEP_KEYS",
    "STEP_LAUNCH",
    "STEP_MEASURE",
    "STEP_PLAN",
    "TABLE_COLUMNS",
    "AccuracyFailed",
    "CompareResult",
    "DownloadResult",
    "EngineLost",
    "EngineVsPlan",
    "KvVsPlan",
    "LaunchResult",
    "MeasureStep",
    "Measurement",
    "PlanFigure",
    "PlanNumbers",
    "PlanResult",
    "PlanRow",
    "Probe",
    "Ramp",
    "RampStep",
    "ReferenceRow",
    "RunFolder",
    "RunState",
    "ServerSide",
    "SignificanceRow",
    "SpeculativeSide",
    "StepKey",
    "SweepRow",
    "TimingSide",
    "VariantRow",
    "figures",
    "kit_root",
    "load_recipe_snapshot",
    "measurements",
    "planned_capacity",
    "portable",
    "portable_recipe",
    "read_results",
    "relative_text",
    "save_results",
    "summary_table",
    "synthetic_results",
    "whole",
    "write_atomic",
]
