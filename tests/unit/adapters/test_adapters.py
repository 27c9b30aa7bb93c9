"""The registry and each adapter: one adapter per kind, the recipe's choices from it, and the
command lines every kind produced before the adapters, byte for byte."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from benchlib import UsageError
from benchlib.adapters import (
    ADAPTERS,
    ENGINE_KINDS,
    SPECULATIVE_FLAGS,
    EngineKind,
    LaunchInputs,
    adapter,
)
from benchlib.engines import plan_launch
from benchlib.recipe import EngineSpec, ModelSpec

#: each kind's plan_launch before the adapters (``kind, argv, base_url, ready_url``, and the
#: refusals), written by the code of main 89358bc
GOLDEN = json.loads((Path(__file__).with_name("golden_commands.json")).read_text())

#: the recipes of the golden file: (engine, model, model path)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "vllm-full": (dict(kind="vllm", python="/env/bin/python", port=8001, max_model_len=4096,
                       parallel={"tp": 2, "pp": 1, "backend": "mp"},
                       speculative={"method": "ngram", "k": 4,
                                    "options": {"prompt_lookup_max": 4}},
                       args=["--dtype", "bfloat16"]),
                  dict(id="org/m", served_name="m", tokenizer="/tok", weights="dummy"), "/w/m"),
    "vllm-bare": (dict(kind="vllm", port=8002), dict(id="org/m"), "/w/m"),
    "vllm-draft": (dict(kind="vllm", port=8003, speculative={"method": "draft", "k": 3,
                                                            "draft_model": "/d"}),
                   dict(id="org/m", served_name="m"), "/w/m"),
    "sglang-full": (dict(kind="sglang", python="/env/bin/python", port=8004,
                         max_model_len=8192, parallel={"tp": 2, "pp": 2},
                         speculative={"method": "eagle", "k": 4, "draft_model": "/e",
                                      "options": {"num_steps": 3, "eagle_topk": 1}},
                         args=["--tp", "1"]),
                    dict(id="org/m", served_name="m", tokenizer="/tok", weights="dummy"),
                    "/w/m"),
    "sglang-mtp": (dict(kind="sglang", port=8005, speculative={"method": "mtp", "k": 2}),
                   dict(id="org/m"), "/w/m"),
    "llamacpp-exe": (dict(kind="llamacpp", executable="/b/llama-server", port=8006,
                          max_model_len=2048,
                          speculative={"method": "draft", "k": 4, "draft_model": "/d.gguf",
                                       "options": {"spec_draft_n_min": 1}},
                          args=["-np", "4", "-t", "1"]),
                     dict(id="m", format="gguf"), "/m.gguf"),
    "llamacpp-exe-ready": (dict(kind="llamacpp", executable="/b/llama-server", port=8007,
                                ready_path="/custom", speculative={"method": "lookup"}),
                           dict(id="m", format="gguf"), "/m.gguf"),
    "llamacpp-python": (dict(kind="llamacpp", python="/env/bin/python", port=8008,
                             max_model_len=1024, speculative={"method": "ngram", "k": 3}),
                        dict(id="m", served_name="alias"), "/m.gguf"),
    "openjet-exe": (dict(kind="openjet", executable="/o/openjet-engine", port=8009,
                         max_model_len=32768, speculative={"method": "mtp", "k": 3}),
                    dict(id="m"), "/m.gguf"),
    "openjet-python": (dict(kind="openjet", python="/env/bin/python", port=8010),
                       dict(id="m"), "/m.gguf"),
    "openjet-bare": (dict(kind="openjet", port=8011, args=["--x"]), dict(id="m"), "/m.gguf"),
    "endpoint": (dict(kind="endpoint", base_url="https://api.example/", ready_path="/health"),
                 dict(id="m"), "x"),
}
REFUSED: dict[str, dict[str, Any]] = {
    "vllm-lookup": dict(kind="vllm", port=1, speculative={"method": "lookup"}),
    "sglang-draft": dict(kind="sglang", port=1, speculative={"method": "draft", "k": 2,
                                                            "draft_model": "/d"}),
    "llamacpp-eagle": dict(kind="llamacpp", port=1, speculative={"method": "eagle", "k": 2,
                                                                "draft_model": "/d"}),
    "openjet-ngram": dict(kind="openjet", port=1, speculative={"method": "ngram", "k": 2}),
}


def test_one_adapter_per_kind_in_order() -> None:
    assert ENGINE_KINDS == get_args(EngineKind) == tuple(ADAPTERS)
    for name, a in ADAPTERS.items():
        assert a.name == name and adapter(name) is a and a.label


def test_the_recipe_schema_offers_the_registry_s_kinds() -> None:
    schema = EngineSpec.model_json_schema()["properties"]["kind"]
    assert tuple(schema["enum"]) == ENGINE_KINDS


def test_an_unknown_kind_names_the_field() -> None:
    with pytest.raises(UsageError, match=r"engine.kind: 'tgi' is not an engine kind"):
        adapter("tgi")


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_lines_are_the_ones_made_before_the_adapters(name: str) -> None:
    engine, model, path = CASES[name]
    plan = plan_launch(EngineSpec(**engine), ModelSpec(**model), Path(path))
    assert [plan.kind, plan.argv, plan.base_url, plan.ready_url] == GOLDEN["plans"][name]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_method_an_engine_lacks_is_refused_as_before(name: str) -> None:
    with pytest.raises(UsageError) as exc:
        plan_launch(EngineSpec(**REFUSED[name]), ModelSpec(id="m"), Path("/m"))
    assert f"UsageError: {exc.value}" == GOLDEN["errors"][name]


def test_the_golden_file_covers_every_kind_that_starts_a_process() -> None:
    kinds = {GOLDEN["plans"][n][0] for n in GOLDEN["plans"]}
    assert kinds | {"scripted"} == set(ENGINE_KINDS)


def test_the_scripted_adapter_starts_the_kit_s_own_server() -> None:
    plan = plan_launch(EngineSpec(kind="scripted", port=8123, args=["--ttft-ms", "30"]),
                       ModelSpec(id="tiny", served_name="t"), Path("unused"))
    assert plan.argv == [sys.executable, "-m", "benchlib", "scripted-server", "--host",
                         "127.0.0.1", "--port", "8123", "--model", "t", "--ttft-ms", "30"]
    assert plan.ready_url == "http://127.0.0.1:8123/v1/models"


def test_adapters_that_start_nothing_have_no_command() -> None:
    launch = LaunchInputs(python=None, executable=None, model_path=Path("m"), served_name="m",
                          host="h", port=1)
    for a in ADAPTERS.values():
        if not a.starts_process:
            with pytest.raises(NotImplementedError):
                a.command(launch)
            assert a.no_flag_set


def test_the_facts_other_packages_ask_for() -> None:
    """What the recipe's and the pipeline's checks used to spell as kind names."""
    assert {k for k, a in ADAPTERS.items() if a.dummy_weights} == {"vllm", "sglang"}
    assert {k for k, a in ADAPTERS.items() if a.parallel} == {"vllm", "sglang"}
    assert {k for k, a in ADAPTERS.items() if a.multi_node} == {"vllm", "sglang"}
    assert {k for k, a in ADAPTERS.items() if a.executor_backend} == {"vllm"}
    assert {k for k, a in ADAPTERS.items() if not a.starts_process} == {"endpoint"}
    assert {k for k, a in ADAPTERS.items() if a.metrics} == {"vllm", "sglang", "llamacpp"}
    assert {k for k, a in ADAPTERS.items() if a.metrics and a.metrics.verified} == {
        "vllm", "llamacpp"}
    assert {k: a.plan_comparison for k, a in ADAPTERS.items() if a.plan_comparison} == {
        "vllm": "kv_blocks", "llamacpp": "n_ctx"}
    assert adapter("openjet").distributions == ("open-jet",)
    assert {"--speculative-config", "-md", "--speculative-algorithm"} <= SPECULATIVE_FLAGS


def test_a_recipe_s_plan_engine_becomes_the_engine_s_plan_settings() -> None:
    """``plan: {engine: sglang}`` (params/multinode's) asks the plan for SGLang's pool, as
    ``PlanConfig(engine="sglang")`` did; ``engine: vllm`` turns it off; others are refused."""
    from benchlib.recipe import recipe_from_dict

    def plan(**settings: Any) -> dict[str, Any]:
        return recipe_from_dict({
            "name": "r", "model": {"id": "m"}, "engine": {"kind": "sglang"},
            "plan": settings, "scenarios": [{"name": "s"}]}).plan

    assert plan(engine="sglang", tp=2) == {"sglang_pool": True, "tp": 2}
    assert plan(engine="vllm") == {"sglang_pool": False}
    assert plan(engine="sglang", sglang_pool=False) == {"sglang_pool": False}
    assert plan(tp=1) == {"tp": 1}
    with pytest.raises(Exception, match=r"plan.engine: one of vllm, sglang \(got 'openjet'\)"):
        plan(engine="openjet")
