"""A recipe scenario is a measure Workload: the same settings, checks and descriptions, the
recipe's defaults and YAML keys, and one call to make its MeasureConfig."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlib.measure import MeasureConfig, Workload
from benchlib.recipe import Recipe, RecipeError, Scenario, load_recipe, recipe_from_dict

REPO = Path(__file__).resolve().parents[3]
GOLDEN = json.loads((REPO / "tests/unit/measure/golden/head.json").read_text())


def _plain(cfg: MeasureConfig) -> Any:
    return json.loads(json.dumps(cfg.model_dump(), default=str))


def test_every_workload_setting_is_a_scenario_key_with_the_same_description() -> None:
    for name, info in Workload.model_fields.items():
        assert Scenario.model_fields[name].description == info.description, name
    # the recipe's own defaults and spelling
    s = Scenario(name="s")
    assert (s.endpoint, s.num_warmups, s.output_len, s.request_timeout_s) == ("chat", 1, 128,
                                                                              600.0)
    assert Scenario.model_fields["request_timeout"].alias == "request_timeout_s"


def test_measure_config_is_what_the_pipeline_built_by_hand() -> None:
    """HEAD's pipeline ``_config`` (seed hard-coded 0) for demo.yaml as it was then (the tiny
    model's demo, kept beside the golden file): the same configs."""
    recipe = load_recipe(REPO / "tests/unit/measure/golden/demo-head.yaml")
    scenarios = {s.name: s for s in recipe.scenarios}
    for case in GOLDEN["pipeline"]:
        s = scenarios[case["scenario"]]
        conc = case["max_concurrency"]
        cfg = s.measure_config(base_url="http://127.0.0.1:8000",
                               model=recipe.model.served_model_name, tokenizer=Path("/tok"),
                               result_json=Path("/o") / f"{s.name}.json", max_concurrency=conc,
                               num_prompts=8, input_len=s.input_len + conc,
                               num_warmups=case["num_warmups"])
        # the TLS, worker, warmup and prefix-unit settings came later (defaults: the
        # system's CAs, checked; the measured worker count, this host; warmups of their own
        # prompts; the engine's prefix-cache unit not given)
        assert _plain(cfg) == {**case["config"], "ca_bundle": None, "insecure": False,
                               "workers": None, "ray_address": None,
                               "warmups_like_vllm": False, "repeats": 1,
                               "trace_time_scale": 1.0, "conversation_think_s": 0.5,
                               "dataset_skip": 0, "prefix_block": None,
                               "prefix_block_from": ""}


def test_the_scenarios_seed_and_new_settings_reach_the_run() -> None:
    s = Scenario.model_validate({"name": "s", "seed": 7, "request_timeout_s": 5,
                                 "percentiles": [50, 99.9], "goodput": {"ttft": 100},
                                 "sampling": {"temperature": 0.6, "stop": ["\n"]}})
    cfg = s.measure_config(base_url="http://h:1", model="m", tokenizer=Path("/t"),
                           result_json=None, max_concurrency=2, num_prompts=4)
    assert (cfg.seed, cfg.request_timeout, cfg.percentiles) == (7, 5.0, (50.0, 99.9))
    again = s.measure_config(base_url="http://h:1", model="m", tokenizer=Path("/t"),
                             result_json=None, max_concurrency=2, num_prompts=4, seed=11)
    assert again.seed == 11  # a later concurrency's own seed (benchlib.measure.workload._seeds)
    assert cfg.goodput == {"ttft": 100.0} and cfg.sampling == {"temperature": 0.6,
                                                               "stop": ["\n"]}


@pytest.mark.parametrize("scenario,key", [
    ({"request_timeout": 5}, "scenarios[0].request_timeout"),  # the YAML key is *_s
    ({"random_range_ratio": 1.0}, "scenarios[0].random_range_ratio"),
    ({"dataset": "file"}, "scenarios[0].dataset_path"),
    ({"goodput": {"ttfb": 5}}, "scenarios[0].goodput"),
    ({"percentiles": [0]}, "scenarios[0].percentiles"),
])
def test_workload_checks_name_the_scenario_key(scenario: dict[str, Any], key: str) -> None:
    data = {"name": "t", "model": {"id": "m"},
            "engine": {"kind": "endpoint", "base_url": "http://127.0.0.1:9"},
            "scenarios": [{"name": "s", **scenario}]}
    with pytest.raises(RecipeError) as info:
        recipe_from_dict(data)
    assert key in [k for k, _ in info.value.problems], info.value.problems


def test_snapshot_round_trips_with_the_yaml_keys() -> None:
    recipe = load_recipe(REPO / "params" / "demo.yaml")
    snapshot = json.loads(recipe.model_dump_json())
    assert "request_timeout_s" in snapshot["scenarios"][0]
    assert snapshot["scenarios"][0]["request_rate"] == "Infinity"
    assert Recipe.model_validate_json(recipe.model_dump_json()) == recipe
