"""Variants, the speculative setting and the fair-A/B rules of a recipe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlib._exceptions import UsageError
from benchlib.engines import plan_launch
from benchlib.pipeline._fairness import Probe, probe_differences
from benchlib.recipe import (
    DIFFERENCES,
    RecipeError,
    caveats,
    map_paths,
    recipe_from_dict,
    variant_settings,
)

BASE: dict[str, Any] = {
    "name": "ab",
    "model": {"id": "tiny", "local_path": "m"},
    "engine": {"kind": "vllm", "version": "0.32.0", "python": "py"},
    "scenarios": [{"name": "chat"}],
}
GGUF = {"id": "tiny", "local_path": "m.gguf", "format": "gguf", "tokenizer": "m"}
LLAMA = {"kind": "llamacpp", "executable": "llama-server"}


def _recipe(variants: list[dict[str, Any]], **extra: Any) -> Any:
    return recipe_from_dict({**BASE, "variants": variants, **extra})


def test_variants_inherit_the_recipe_and_add_their_own() -> None:
    r = _recipe([{"name": "spec", "speculative": {"method": "ngram", "k": 4}},
                 {"name": "nospec", "args": ["--max-num-seqs", "8"]}],
                compare={"differences": ["speculative", "engine_flags"]})
    (n1, spec), (n2, nospec) = r.variant_recipes()
    assert (n1, n2) == ("spec", "nospec")
    assert spec.engine.speculative.label == "ngram k=4" and spec.variants == []
    assert nospec.engine.args == ["--max-num-seqs", "8"] and not nospec.engine.speculative.on
    argv = plan_launch(spec.engine, spec.model, Path("m"), port=8000).argv
    i = argv.index("--speculative-config")
    assert json.loads(argv[i + 1]) == {"method": "ngram", "num_speculative_tokens": 4}
    assert recipe_from_dict(BASE).variant_recipes()[0][0] == ""


def test_speculative_settings_are_checked() -> None:
    for spec, words in [({"method": "ngram"}, "needs k"),
                        ({"method": "draft", "k": 4}, "needs draft_model"),
                        ({"method": "off", "k": 2}, "takes no k"),
                        ({"method": "ngram", "k": 2, "draft_model": "d"}, "no draft_model"),
                        ({"method": "medusa", "k": 2}, "method")]:
        with pytest.raises(RecipeError, match=words):
            _recipe([{"name": "x", "speculative": spec}])
    with pytest.raises(RecipeError, match="not in args as well"):
        _recipe([{"name": "x", "speculative": {"method": "ngram", "k": 2},
                  "args": ["--speculative-config", "{}"]}])


def test_each_engine_gets_its_own_speculative_flags() -> None:
    r = _recipe([{"name": "d", "engine": LLAMA, "model": GGUF,
                  "speculative": {"method": "draft", "k": 4, "draft_model": "q8.gguf",
                                  "options": {"spec_draft_n_min": 1}}}],
                compare={"differences": []})
    (_, d), = r.variant_recipes()
    argv = plan_launch(d.engine, d.model, Path("m.gguf"), port=8000).argv
    i = argv.index("--spec-type")
    assert argv[i:i + 8] == ["--spec-type", "draft-simple", "--spec-draft-model", "q8.gguf",
                             "--spec-draft-n-max", "4", "--spec-draft-n-min", "1"]
    (_, sfx), = _recipe([{"name": "l", "engine": LLAMA, "model": GGUF,
                          "speculative": {"method": "suffix", "k": 4}}]).variant_recipes()
    with pytest.raises(UsageError, match="suffix"):
        plan_launch(sfx.engine, sfx.model, Path("m.gguf"), port=8000)


def test_dflash_sglang_options_and_openjet_depth() -> None:
    """Seed 003's DFlash2 (vLLM), seed 001's EAGLE settings (SGLang) and open-jet's MTP
    depth, whose default is on: "off" must say -d 0."""
    (_, df), = _recipe([{"name": "df", "speculative": {
        "method": "dflash", "k": 7, "draft_model": "drafter"}}]).variant_recipes()
    argv = plan_launch(df.engine, df.model, Path("m"), port=8000).argv
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == {
        "method": "dflash", "num_speculative_tokens": 7, "model": "drafter"}
    with pytest.raises(RecipeError, match="needs draft_model"):
        _recipe([{"name": "x", "speculative": {"method": "dflash", "k": 7}}])
    sglang = {"kind": "sglang", "python": "py"}
    (_, eagle), = _recipe([{"name": "e", "engine": sglang, "speculative": {
        "method": "mtp", "k": 4, "options": {"num_steps": 3, "eagle_topk": 1}}}],
        compare={"differences": ["engine"]}).variant_recipes()
    argv = plan_launch(eagle.engine, eagle.model, Path("m"), port=8000).argv
    i = argv.index("--speculative-algorithm")
    assert argv[i:i + 8] == ["--speculative-algorithm", "EAGLE",
                             "--speculative-num-draft-tokens", "4", "--speculative-num-steps",
                             "3", "--speculative-eagle-topk", "1"]
    openjet = {"kind": "openjet", "executable": "openjet-engine"}
    pairs = _recipe([{"name": "on", "engine": openjet, "model": GGUF,
                      "speculative": {"method": "mtp", "k": 4}},
                     {"name": "off", "engine": openjet, "model": GGUF}],
                    compare={"differences": ["speculative"]}).variant_recipes()
    tails = [plan_launch(r.engine, r.model, Path("m.gguf"), port=8000).argv[-2:]
             for _, r in pairs]
    assert tails == [["-d", "4"], ["-d", "0"]]
    with pytest.raises(RecipeError, match="MTP depth"):
        _recipe([{"name": "x", "engine": {**openjet, "args": ["-d", "2"]}, "model": GGUF}])


def test_an_undeclared_difference_is_refused_and_named() -> None:
    variants: list[dict[str, Any]] = [{"name": "vllm"},
                                      {"name": "llama", "engine": LLAMA, "model": GGUF}]
    with pytest.raises(RecipeError) as err:
        _recipe(variants)
    text = str(err.value)
    assert "engine" in text and "checkpoint_format" in text and "compare.differences" in text
    r = _recipe(variants, compare={"differences": ["engine", "checkpoint_format"]})
    notes = caveats(r.variant_recipes(), r.compare.differences)
    assert notes["vllm"] == ["engine: vllm 0.32.0", "checkpoint_format: safetensors"]
    assert notes["llama"][1] == "checkpoint_format: gguf (m.gguf)"
    assert set(variant_settings(r)) <= set(DIFFERENCES)


def test_flags_differ_only_within_one_engine_kind() -> None:
    with pytest.raises(RecipeError, match="engine_flags"):
        _recipe([{"name": "a"}, {"name": "b", "args": ["--enforce-eager"]}])
    with pytest.raises(RecipeError, match="chat_template"):
        _recipe([{"name": "a"}, {"name": "b", "args": ["--chat-template", "t.jinja"]}],
                compare={"differences": ["engine_flags"]})
    with pytest.raises(RecipeError, match="thinking"):
        _recipe([{"name": "a"}, {"name": "b", "thinking": False}])
    with pytest.raises(RecipeError, match="unique"):
        _recipe([{"name": "a"}, {"name": "a"}])


def test_paths_of_variants_are_mapped() -> None:
    r = _recipe([{"name": "d", "engine": LLAMA, "model": GGUF,
                  "speculative": {"method": "draft", "k": 2, "draft_model": "q8.gguf"}}])
    moved = map_paths(r, lambda p: Path("/kit") / p)
    (_, d), = moved.variant_recipes()
    assert d.engine.executable == Path("/kit/llama-server")
    assert d.engine.speculative.draft_model == Path("/kit/q8.gguf")
    assert d.model.local_path == Path("/kit/m.gguf") and d.model.tokenizer == Path("/kit/m")


def _probe(**kw: Any) -> Probe:
    base: dict[str, Any] = dict(endpoint="chat", scenario="chat", prompts_sha256="h",
                                prompt_tokens=20, output_tokens=16, output_tokens_source="usage",
                                max_tokens=16, ignore_eos=True)
    return Probe(**{**base, **kw})


def test_probe_differences_name_the_setting() -> None:
    ref = [_probe()]
    assert probe_differences(ref, [_probe()]) == []
    assert probe_differences(ref, [_probe(prompt_tokens=21)])[0][0] == "chat_template"
    assert probe_differences(ref, [_probe(prompts_sha256="x")])[0][0] == "tokenizer"
    assert probe_differences(ref, [_probe(output_tokens_source="tokenizer")])[0][0] == "usage"
    (setting, why), = probe_differences(ref, [_probe(output_tokens=9)])
    assert setting is None and "does not honour max_tokens" in why
    (setting, why), = probe_differences(ref, [_probe(error="HTTP 500")])
    assert setting is None and "HTTP 500" in why
