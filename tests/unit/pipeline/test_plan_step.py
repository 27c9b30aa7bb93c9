"""00_plan's step: the plan from the recipe, and scenarios too long for max_model_len named."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.pipeline import plan_step
from benchlib.recipe import recipe_from_dict


def test_plan_and_too_long_scenarios(tiny_model: Path, tmp_path: Path) -> None:
    recipe = recipe_from_dict({
        "name": "x", "model": {"id": "m", "local_path": str(tiny_model)},
        "engine": {"kind": "endpoint", "base_url": "http://127.0.0.1:9", "max_model_len": 2048},
        "plan": {"gpu_memory_gib": 16, "kv_budget_gib": 1.0},
        "scenarios": [{"name": "long", "input_len": 2000, "output_len": 128},
                      {"name": "fine", "input_len": 100, "output_len": 100}]})
    out = tmp_path / "r.json"
    the_plan, table = plan_step(recipe, out)
    assert the_plan is not None and len(table) == 2
    saved = json.loads(out.read_text())
    assert saved["plan"]["kv_cache_tokens"] == 524_288  # what vLLM CPU logs for 1 GiB
    assert saved["warnings"] == ["scenarios long need more than max_model_len=2048 tokens per "
                                 "request: the engine will refuse them"]
