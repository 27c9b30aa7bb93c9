"""The steps named once, each tied to its result model: RunFolder.result is typed."""

from __future__ import annotations

from pathlib import Path

from benchlib.recipe import ALL_STEPS
from benchlib.runs import (
    STEP_KEYS,
    STEP_LAUNCH,
    STEP_MEASURE,
    LaunchResult,
    MeasureStep,
    RunFolder,
    save_results,
)


def test_the_keys_are_the_recipes_steps_in_order() -> None:
    assert tuple(k.name for k in STEP_KEYS) == ALL_STEPS
    assert str(STEP_MEASURE) == "03_measure" and STEP_MEASURE.model is MeasureStep


def test_a_folder_reads_a_steps_results_typed(tmp_path: Path) -> None:
    folder = RunFolder(path=tmp_path)
    assert folder.result(STEP_LAUNCH) is None  # none saved
    save_results(folder.results(STEP_LAUNCH), LaunchResult(kind="vllm", startup_s=3.0))
    launch = folder.result(STEP_LAUNCH)
    assert isinstance(launch, LaunchResult) and launch.startup_s == 3.0
    assert folder.results(STEP_LAUNCH) == folder.results("02_launch")
