"""03_measure's choices before it measures: the prefix-cache unit each engine's shared-prefix
share is counted in (prefix_unit), from what 02_launch saw of the engine."""

from __future__ import annotations

from pathlib import Path

from benchlib.pipeline.steps.measure import prefix_unit
from benchlib.recipe import Recipe, recipe_from_dict
from benchlib.runs import EngineVsPlan, LaunchResult

REPORTED = {"block_size": 128, "block_size_from": "/metrics vllm:cache_config_info{block_size}"}


def _recipe(tmp_path: Path, **engine: object) -> Recipe:
    return recipe_from_dict({
        "name": "u", "model": {"id": "tiny", "local_path": str(tmp_path)},
        "engine": engine, "scenarios": [{"name": "chat"}]})


def test_the_unit_is_the_engines_own(tmp_path: Path) -> None:
    """vLLM's CPU build reported 128-token blocks at 02_launch: the share is counted in them,
    not in the 16 of vLLM's GPU default; a flag in engine.args wins; an endpoint's cache is
    not known (the unit is then assumed, and the result says so)."""
    vllm = _recipe(tmp_path, kind="vllm")
    launched = LaunchResult(plan_vs_engine=EngineVsPlan(settings=REPORTED))
    assert prefix_unit(vllm, launched) == (
        128, "vLLM reported it: /metrics vllm:cache_config_info{block_size}")
    assert prefix_unit(vllm, None)[0] == 16  # type: ignore[index]
    flagged = _recipe(tmp_path, kind="vllm", args=["--block-size", "32"])
    assert prefix_unit(flagged, launched) == (32, "engine.args --block-size 32")
    assert prefix_unit(_recipe(tmp_path, kind="endpoint", base_url="http://127.0.0.1:9"),
                       None) is None
