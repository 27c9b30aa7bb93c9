"""02_launch's results typed: a stored launch loads and dumps byte-equal; the plan against
the engine is read by figure, and each variant's planned capacity is its own engine's."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.recipe import load_recipe
from benchlib.runs import (
    STEP_LAUNCH,
    STEP_PLAN,
    EngineVsPlan,
    LaunchResult,
    PlanFigure,
    PlanResult,
    planned_capacity,
)

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"


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


def test_each_variant_is_planned_with_its_own_engines_settings() -> None:
    """The capacity set beside a measurement: 02_launch's plan for the engine's own settings
    where it compared the engine (llama.cpp: its slots; vLLM: tokens over max_model_len),
    00_plan's only for vLLM without speculation, and none for another engine or a speculative
    variant that 02_launch did not compare (00_plan's vLLM split would be another number)."""
    run = DATA / "h100_compare" / "h200-vllm-llamacpp"
    variants = dict(load_recipe(REPO / "params" / "h200-vllm-llamacpp.yaml").variant_recipes())
    plan = PlanResult.model_validate(
        json.loads((run / "vllm-nospec" / ".results" / f"{STEP_PLAN}.json").read_text()))
    assert plan.plan is not None
    bare = LaunchResult()  # 02_launch compared nothing (open-jet, an engine not started)
    assert planned_capacity(plan, bare, variants["vllm-nospec"]) == (
        plan.plan.kv_cache_tokens, plan.plan.max_concurrency)
    for name in ("vllm-ngram", "llamacpp-nospec"):
        assert planned_capacity(plan, bare, variants[name]) == (None, None)
        assert planned_capacity(plan, None, variants[name]) == (None, None)
    row = PlanFigure(figure="kv_cache_tokens", unit="tokens", plan=65_536, engine=65_536,
                     source="log", diff_pct=0.0, flagged=False)
    llama = LaunchResult(plan_vs_engine=EngineVsPlan(settings={"slots": 64}, rows=[row]))
    assert planned_capacity(plan, llama, variants["llamacpp-nospec"]) == (65_536, 64.0)
    vllm = LaunchResult(plan_vs_engine=EngineVsPlan(
        settings={"max_model_len": 1024}, rows=[row.model_copy(update={"plan": 0})]))
    # a capacity of 0 is the plan's answer, not a gap for 00_plan's figure to fill
    assert planned_capacity(plan, vllm, variants["vllm-ngram"]) == (0, 0.0)
