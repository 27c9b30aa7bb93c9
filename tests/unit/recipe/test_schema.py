"""benchlib.recipe._schema and its rules (_rules.py): every rule a recipe breaks gives a
message that names the field (``engine.base_url``, ``plan.engine``, ``variants[NAME]`` …) and
the place it is reported at, checked word for word on the smallest recipe that breaks it; and
what a valid recipe makes of its variants and its ``plan`` settings."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from benchlib.recipe import Recipe, recipe_from_dict
from benchlib.recipe._load import RecipeError
from benchlib.recipe._rules import DUMMY_WEIGHT_ENGINES
from benchlib.recipe._schema import EngineSpec

BASE: dict[str, Any] = {
    "name": "r", "model": {"id": "org/m", "local_path": "m"}, "engine": {"kind": "vllm"},
    "scenarios": [{"name": "s", "input_len": 8, "output_len": 4}]}
ENDPOINT = {"kind": "endpoint", "base_url": "https://api.example.com"}


def _recipe(**top: Any) -> Recipe:
    data = copy.deepcopy(BASE)
    data.update(top)
    return recipe_from_dict(data)


def _engine(**engine: Any) -> Recipe:
    return _recipe(engine={"kind": "vllm", **engine})


def _problems(make: Any, **kw: Any) -> list[tuple[str, str]]:
    with pytest.raises(RecipeError) as err:
        make(**kw)
    return list(err.value.problems)


@pytest.mark.parametrize("engine,message", [
    ({"kind": "endpoint"}, "engine.kind endpoint needs engine.base_url"),
    ({**ENDPOINT, "nice": {"x": 10}}, "engine.nice: the kit starts no process for an endpoint"),
    ({**ENDPOINT, "lock": "x.lock"},
     "engine.lock: an endpoint is no Python environment the kit can hold to a lock file"),
    ({"kind": "llamacpp", "lock": "x.lock"},
     "engine.lock: llama.cpp is no Python environment the kit can hold to a lock file"),
    ({"kind": "llamacpp", "parallel": {"tp": 2}},
     "engine.parallel: the kit sets parallel sizes for vLLM and SGLang only, not llamacpp "
     "(give its own flags in args)"),
    ({"kind": "vllm", "base_url": "ftp://h"},
     "engine.base_url must start with http:// or https://"),
    ({"kind": "vllm", "base_url": "HTTP://h"},
     "engine.base_url must start with http:// or https://"),
    ({"kind": "vllm", "ca_bundle": "ca.pem"},
     "engine.ca_bundle and engine.insecure are for an https:// engine.base_url"),
    ({"kind": "vllm", "base_url": "http://h", "insecure": True},
     "engine.ca_bundle and engine.insecure are for an https:// engine.base_url"),
    ({"kind": "vllm", "args": ["--api-key", "abc"]},
     "engine.args: write --api-key ${NAME} and export NAME; a secret's value never goes into "
     "a recipe"),
    ({"kind": "vllm", "args": ["--port", "1", "--hf-token", "hf_x"]},
     "engine.args: write --hf-token ${NAME} and export NAME; a secret's value never goes into "
     "a recipe"),
    ({"kind": "vllm", "args": ["--token=abc"]}, "engine.args: write --token=${NAME} and export "
     "NAME"),
    # the name ends at the first "=": a value holding "=" is still the secret's
    ({"kind": "vllm", "args": ["--api-key=abc=def"]}, "engine.args: write --api-key=${NAME} "
     "and export NAME"),
    ({"kind": "vllm", "env": {"HF_TOKEN": "x"}},
     "engine.env must not hold secrets; name the variable in api_key_env / "
     "model.hf_token_env and export it instead"),
    ({"kind": "openjet", "args": ["-d", "3"]},
     "engine.args: open-jet's MTP depth (-d) comes from speculative (method mtp with k; off "
     "sends -d 0)"),
    ({"kind": "openjet", "args": ["--draft=2"]},
     "engine.args: open-jet's MTP depth (-d) comes from speculative (method mtp with k; off "
     "sends -d 0)"),
    ({"kind": "vllm", "speculative": {"method": "ngram", "k": 4},
      "args": ["--speculative-config", "{}"]},
     "engine.args: the speculative setting goes in speculative (method, k, draft_model, "
     "options), not in args as well"),
    ({"kind": "vllm", "speculative": {"method": "ngram", "k": 4},
      "args": ["--speculative-config={}"]},
     "engine.args: the speculative setting goes in speculative (method, k, draft_model, "
     "options), not in args as well"),
    ({"kind": "vllm", "speculative": {"method": "ngram", "k": 4},
      "args": ['--speculative-config={"method": "a=b"}']},
     "engine.args: the speculative setting goes in speculative (method, k, draft_model, "
     "options), not in args as well"),
])
def test_each_engine_rule_names_its_field(engine: dict[str, Any], message: str) -> None:
    assert _problems(_recipe, engine=engine) == [("engine", message)]


@pytest.mark.parametrize("engine", [
    ENDPOINT, {"kind": "endpoint", "base_url": "http://h:8000"},
    {**ENDPOINT, "ca_bundle": "ca.pem", "insecure": True},
    {"kind": "vllm", "args": ["--api-key", "${KEY}"]},
    {"kind": "vllm", "args": ["--api-key=${KEY}", "--api-key"]},  # a flag last has no value
    {"kind": "vllm", "args": ["--token"]},
    {"kind": "vllm", "args": ["--speculative-config", "{}"]},  # speculation off: args may
    {"kind": "vllm", "env": {"VLLM_CPU_KVCACHE_SPACE": "1"}},
    {"kind": "vllm", "nice": {"VLLM::EngineCore": 10}},
    {"kind": "vllm", "lock": "x.lock"}, {"kind": "scripted", "lock": "x.lock"},
    {"kind": "openjet", "args": ["-t", "3"]},
])
def test_what_the_engine_rules_let_through(engine: dict[str, Any]) -> None:
    assert _recipe(engine=engine).engine.kind == engine["kind"]


def test_the_served_name_defaults_to_the_id() -> None:
    assert _recipe().model.served_model_name == "org/m"
    named = _recipe(model={"id": "org/m", "served_name": "m1"})
    assert named.model.served_model_name == "m1"


def test_plan_engine_becomes_that_engines_settings() -> None:
    """SGLang's report adds its pool; the other planned engine's settings are switched off,
    and a setting given beside plan.engine wins."""
    assert _recipe(plan={"engine": "sglang"}).plan == {"sglang_pool": True}
    assert _recipe(plan={"engine": "vllm", "tp": 2}).plan == {"sglang_pool": False, "tp": 2}
    assert _recipe(plan={"engine": "sglang", "sglang_pool": False}).plan == {
        "sglang_pool": False}
    assert _recipe(plan={"tp": 2}).plan == {"tp": 2}


def test_a_bad_plan_names_its_key() -> None:
    assert _problems(_recipe, plan={"engine": "llamacpp"}) == [
        ("plan", "plan.engine: one of vllm, sglang (got 'llamacpp')")]
    assert _problems(_recipe, plan={"model": "x"}) == [
        ("(top level)", "plan.model is not a setting: the plan reads the model's config.json "
         "from model.local_path or the hub")]
    [(where, message)] = _problems(_recipe, plan={"tpp": 2})
    assert where == "(top level)" and message.startswith("plan.tpp")
    [(where, message)] = _problems(_recipe, plan={"tp": 0})
    assert where == "(top level)" and message.startswith("plan.tp")


def test_names_must_be_unique() -> None:
    s = BASE["scenarios"][0]
    assert _problems(_recipe, scenarios=[s, {**s, "name": "t"}, s, {**s, "name": "t"}]) == [
        ("(top level)", "scenario names must be unique: s, t")]
    assert _problems(_recipe, variants=[{"name": n} for n in "abcab"]) == [
        ("(top level)", "variant names must be unique: a, b")]


def test_dummy_weights_need_an_engine_that_makes_them() -> None:
    assert DUMMY_WEIGHT_ENGINES == ("vllm", "sglang")
    model = {"id": "m", "local_path": "m", "weights": "dummy"}
    assert _recipe(model=model).model.weights == "dummy"
    assert _problems(_recipe, model=model, engine={"kind": "llamacpp"}) == [
        ("(top level)", "model: weights dummy needs an engine that makes them (vllm, sglang: "
         "--load-format dummy), not llamacpp")]
    assert _problems(_recipe, model=model, variants=[
        {"name": "a"}, {"name": "cpp", "engine": {"kind": "llamacpp"}}]) == [
        ("(top level)", "variants[cpp]: weights dummy needs an engine that makes them (vllm, "
         "sglang: --load-format dummy), not llamacpp")]


def test_a_measuring_recipe_needs_a_scenario() -> None:
    assert _problems(_recipe, scenarios=[]) == [
        ("(top level)", "scenarios: at least one, unless steps leaves out 03_measure (a "
         "start-only run: the engine started, its memory report and /metrics read, stopped)")]
    start_only = _recipe(scenarios=[], steps=["00_plan", "02_launch"])
    assert start_only.steps == ["00_plan", "02_launch"] and start_only.scenarios == []


def test_the_machines_rule_names_each_engine_by_its_place() -> None:
    """Every engine that outgrows the hardware is named where it sits: the recipe's engine,
    then a variant's own by its index (variant a runs the recipe's engine: not named twice)."""
    too_wide = " × pp 1 = 2 GPUs, but the hardware has at most hardware.gpu_count 1: change " \
        "tp/pp or hardware.nodes/gpu_count"
    assert _problems(
        _recipe, hardware={"gpu_count": 1}, engine={"kind": "vllm", "parallel": {"tp": 2}},
        compare={"differences": ["engine"]}, variants=[
            {"name": "a"}, {"name": "b", "engine": {"kind": "sglang", "parallel": {"tp": 2}}}],
    ) == [("(top level)", f"engine.parallel: tp 2{too_wide}; "
           f"variants[1].engine.parallel: tp 2{too_wide}")]
    assert _recipe(hardware={"gpu_count": 2}, engine={"kind": "vllm", "parallel": {"tp": 2}})


def test_the_default_steps_are_all_five() -> None:
    assert _recipe().steps == ["00_plan", "01_download", "02_launch", "03_measure",
                               "04_compare"]


def test_without_variants_the_recipe_is_its_own() -> None:
    r = _recipe()
    assert r.variant_recipes() == [("", r)]


def test_each_variant_gets_its_engine_model_flags_and_thinking() -> None:
    r = _recipe(engine={"kind": "vllm", "args": ["-O0"]}, thinking=True, compare={
        "differences": ["engine", "model", "speculative", "tokenizer", "thinking"]}, variants=[
        {"name": "a", "args": ["--enforce-eager"]},
        {"name": "b", "thinking": False, "model": {"id": "org/other"},
         "speculative": {"method": "ngram", "k": 4},
         "engine": {"kind": "sglang", "args": ["--x"]}}])
    (na, a), (nb, b) = r.variant_recipes()
    assert (na, nb) == ("a", "b")
    assert a.engine.args == ["-O0", "--enforce-eager"] and a.engine.kind == "vllm"
    assert a.model.id == "org/m" and a.thinking is True and not a.engine.speculative.on
    assert b.engine.args == ["--x"] and b.engine.kind == "sglang" and b.model.id == "org/other"
    assert b.thinking is False and b.engine.speculative.on and b.engine.speculative.k == 4
    for v in (a, b):
        assert v.variants == [] and v.name == "r"


def test_a_variants_flags_meet_the_engine_rules() -> None:
    """The engine's speculation with a variant's speculative flag in args is refused."""
    [(where, message)] = _problems(
        _recipe, engine={"kind": "vllm", "speculative": {"method": "ngram", "k": 4}},
        variants=[{"name": "a", "args": ["--speculative-config", "{}"]}])
    assert "engine.args: the speculative setting goes in speculative" in message
    assert where == "(top level)"


def test_an_assumption_goes_to_the_variants_it_names() -> None:
    a = {"setting": "variants.a.args", "value": "-O0", "why": "the source gives none"}
    r = _recipe(variants=[{"name": "a"}, {"name": "b"}], assumptions=[a])
    (_, va), (_, vb) = r.variant_recipes()
    assert [x.setting for x in va.assumptions] == ["engine.args"] and vb.assumptions == []


def test_an_engine_spec_alone_checks_the_same() -> None:
    with pytest.raises(ValueError, match=r"engine\.kind endpoint needs engine\.base_url"):
        EngineSpec.model_validate({"kind": "endpoint"})
