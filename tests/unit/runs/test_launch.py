"""02_launch's results typed: a stored launch loads and dumps byte-equal; the plan against
the engine is read by figure."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.runs import STEP_LAUNCH, EngineVsPlan, LaunchResult, PlanFigure

DATA = Path(__file__).resolve().parents[2] / "data"


def _same(dumped: object, data: object) -> bool:
    """Equal as JSON text (an int read into a float field would print 6.0, not 6)."""
    return json.dumps(dumped, sort_keys=True) == json.dumps(data, sort_keys=True)


def test_a_stored_launch_loads_and_dumps_byte_equal() -> None:
    for folder in (DATA / "h200_run" / "h200-llamacpp" / "q4_k_m",
                   DATA / "h200_memory" / "h200-vllm-short" / "vllm-nospec"):
        data = json.loads((folder / ".results" / f"{STEP_LAUNCH}.json").read_text())
        launch = LaunchResult.model_validate(data)
        assert _same(launch.model_dump(mode="json", exclude_unset=True), data)
        assert launch.plan_vs_engine.rows


def test_the_plan_against_the_engine_by_figure() -> None:
    row = PlanFigure(figure="kv_cache_tokens", unit="tokens", plan=10, engine=12,
                     source="log", diff_pct=20.0, flagged=True)
    vs = EngineVsPlan(settings={"block_size": 16}, rows=[row])
    assert vs.row("kv_cache_tokens") == row and vs.row("kv_blocks") is None
