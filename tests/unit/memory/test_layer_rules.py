"""benchlib.memory._layers, rule by rule: each way a config names its layers' mixers and
feed-forwards, read from the raw config.json files kept in tests/data (Jamba-v0.1, Kimi-Linear,
Mistral-7B v0.1 and v0.3, Qwen2.5, Qwen3.5-9B, Nemotron-3-Nano, Bamba) or, where no stored
checkpoint uses a spelling, from the smallest dict that has it.

The rules are read raw here (no transformers defaults filled in): transformers rewrites some of
these keys into others (Jamba's periods into ``layers_num_experts``, Llama-4's interleave step
into ``moe_layers``), so the tests through full configs never reach those branches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlib.memory._layers import ffn_kinds, has_mamba, mixer_kinds

DATA = Path(__file__).resolve().parents[2] / "data"
CORPUS = DATA / "configs" / "corpus"


def _raw(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "config.json").read_text())
    return data


def _at(n: int, where: set[int], yes: str, no: str) -> list[str]:
    return [yes if i in where else no for i in range(n)]


# --- has_mamba ------------------------------------------------------------------------------

@pytest.mark.parametrize("cfg,expected", [
    ({"ssm_state_size": 128}, True),             # Nemotron-H, Granite-4.0-H
    ({"conv_L_cache": 3}, True),                 # LFM2's short convolutions
    ({"mamba_d_state": 16}, True),               # Jamba, Bamba
    ({"ssm_state_size": None}, False),           # a key set to null says nothing
    ({"mamba_ssm_dtype": "float32", "linear_num_value_heads": 32}, False),  # Qwen3.5: GDN
    ({"hidden_size": 4096}, False),
])
def test_a_config_describes_mamba_by_its_state_keys(cfg: dict[str, Any], expected: bool) -> None:
    assert has_mamba(cfg) is expected


def test_the_stored_hybrids_are_told_apart() -> None:
    """Jamba, Bamba and Nemotron-3-Nano carry Mamba keys; Qwen3.5's ``mamba_ssm_dtype`` sits
    beside linear-attention heads, so it is a Gated-DeltaNet model, not a Mamba one."""
    assert has_mamba(_raw(CORPUS / "ai21labs--jamba-v0.1"))
    assert has_mamba(_raw(CORPUS / "ibm-fms--bamba-9b"))
    assert has_mamba(_raw(CORPUS / "nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16"))
    assert not has_mamba(_raw(CORPUS / "qwen--qwen3.5-9b")["text_config"])


# --- Rule 1: mixers -----------------------------------------------------------------------

@pytest.mark.parametrize("name,kind", [
    ("ssm", "mamba"), ("conv", "mamba"), ("m", "mamba"), ("shortconv", "mamba"),
    ("mamba", "mamba"), ("recurrent", "linear"), ("linear_attention", "linear"),
    ("sliding_attention", "sliding"), ("chunked_attention", "sliding"), ("local", "sliding"),
    ("full_attention", "full"), ("attention", "full"), ("mlp", "none"), ("moe", "none"),
    ("-", "none"), ("E", "none"),
])
def test_every_per_layer_name_maps_to_its_mixer(name: str, kind: str) -> None:
    """A per-layer list's names (any case), read without Mamba keys: a recurrent layer is
    then linear attention."""
    assert mixer_kinds({"layer_types": [name, "full_attention"]}, 2, "full") == [kind, "full"]
    assert mixer_kinds({"layers_block_type": [name.upper()]}, 1, "mla") == [
        "mla" if kind == "full" else kind]


def test_a_recurrent_layer_is_mamba_when_the_config_describes_mamba() -> None:
    cfg = {"layer_types": ["recurrent", "linear_attention", "attention"], "ssm_state_size": 16}
    assert mixer_kinds(cfg, 3, "full") == ["mamba", "mamba", "full"]


def test_a_per_layer_list_of_the_wrong_length_is_not_used() -> None:
    assert mixer_kinds({"layer_types": ["sliding_attention"]}, 2, "full") == ["full", "full"]


def test_nemotron_3_nanos_pattern_string() -> None:
    """52 characters: M Mamba, E MoE, * attention (6 of them), read one layer each."""
    raw = _raw(CORPUS / "nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16")
    pattern = raw["hybrid_override_pattern"]
    kinds = mixer_kinds(raw, 52, "full")
    assert kinds[:6] == ["mamba", "none", "mamba", "none", "mamba", "full"]
    assert kinds.count("full") == 6 and kinds.count("mamba") == pattern.count("M") == 23
    assert kinds.count("none") == pattern.count("E") == 23


def test_kimi_linears_one_based_full_attention_layers() -> None:
    """Kimi-Linear lists its MLA layers 1-based (4, 8, …, 24, 27 of 27); the rest are KDA."""
    raw = _raw(DATA / "vllm_logs" / "kimi-linear-48b-awq-3090-tp2")
    assert mixer_kinds(raw, 27, "mla") == _at(27, {3, 7, 11, 15, 19, 23, 26}, "mla", "linear")


@pytest.mark.parametrize("key", ["attn_layer_indices", "full_attn_idxs"])
def test_zero_based_attention_index_lists(key: str) -> None:
    assert mixer_kinds({key: [0, 2]}, 4, "full") == ["full", "linear", "full", "linear"]
    assert mixer_kinds({key: [1], "mamba_d_state": 16}, 3, "full") == [
        "mamba", "full", "mamba"]


def test_bambas_attention_indices() -> None:
    raw = _raw(CORPUS / "ibm-fms--bamba-9b")
    assert mixer_kinds(raw, 32, "full") == _at(32, {9, 18, 27}, "full", "mamba")


def test_jambas_attention_period_and_offset() -> None:
    """Jamba-v0.1: period 8, offset 4 → attention at layers 4, 12, 20, 28; Mamba elsewhere."""
    raw = _raw(CORPUS / "ai21labs--jamba-v0.1")
    assert mixer_kinds(raw, 32, "full") == _at(32, {4, 12, 20, 28}, "full", "mamba")


def test_an_attention_period_without_offset_starts_at_layer_0() -> None:
    assert mixer_kinds({"attn_layer_period": 3}, 6, "full") == _at(6, {0, 3}, "full", "linear")


def test_a_full_attention_interval_ends_each_run_of_linear_layers() -> None:
    """Qwen3.5-9B: interval 4 gives the same layers as its own layer_types list."""
    text = _raw(CORPUS / "qwen--qwen3.5-9b")["text_config"]
    assert text["full_attention_interval"] == 4
    listed = mixer_kinds(text, 32, "full")
    assert listed == _at(32, {3, 7, 11, 15, 19, 23, 27, 31}, "full", "linear")
    del text["layer_types"]
    assert mixer_kinds(text, 32, "full") == listed


def test_an_attention_type_list_marks_full_attention_with_1() -> None:
    assert mixer_kinds({"attn_type_list": [0, 0, 1]}, 3, "mla") == ["linear", "linear", "mla"]


# --- Rule 1, the sliding-window patterns ----------------------------------------------------

def test_mistral_v0_1_slides_every_layer_and_v0_3_none() -> None:
    assert mixer_kinds(_raw(CORPUS / "mistralai--mistral-7b-instruct-v0.1"), 32, "full") == [
        "sliding"] * 32
    assert mixer_kinds(_raw(CORPUS / "mistralai--mistral-7b-instruct-v0.3"), 32, "full") == [
        "full"] * 32


@pytest.mark.parametrize("model_type", ["mistral", "mixtral", "phi3", "starcoder2"])
def test_the_whole_model_sliding_types(model_type: str) -> None:
    assert mixer_kinds({"model_type": model_type, "sliding_window": 4096}, 2, "full") == [
        "sliding", "sliding"]
    assert mixer_kinds({"model_type": "llama", "sliding_window": 4096}, 2, "full") == [
        "full", "full"]


def test_qwen2_keeps_a_window_it_switched_off() -> None:
    raw = _raw(CORPUS / "qwen--qwen2.5-7b-instruct")
    assert raw["sliding_window"] and raw["use_sliding_window"] is False
    assert mixer_kinds(raw, 28, "full") == ["full"] * 28
    off = {"model_type": "mistral", "sliding_window": 4096, "use_sliding_window": False}
    assert mixer_kinds(off, 2, "full") == ["full", "full"]


def test_qwen2_switched_on_slides_from_max_window_layers() -> None:
    cfg = {"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": True,
           "max_window_layers": 2}
    assert mixer_kinds(cfg, 4, "full") == ["full", "full", "sliding", "sliding"]
    del cfg["max_window_layers"]
    assert mixer_kinds(cfg, 4, "full") == ["full"] * 4


@pytest.mark.parametrize("key", ["sliding_window_pattern", "_sliding_window_pattern"])
def test_gemmas_pattern_makes_every_sixth_layer_global(key: str) -> None:
    cfg = {"model_type": "gemma3_text", "sliding_window": 1024, key: 6}
    assert mixer_kinds(cfg, 12, "full") == _at(12, {5, 11}, "full", "sliding")
    assert mixer_kinds({**cfg, "sliding_window": None}, 12, "full") == ["full"] * 12


# --- Rule 2: feed-forwards ------------------------------------------------------------------

def test_layers_num_experts_routes_where_more_than_one_expert() -> None:
    cfg = {"layers_num_experts": [1, 2, 16, 1]}
    assert ffn_kinds(cfg, 4, True) == ["dense", "moe", "moe", "dense"]


def test_moe_layers_lists_the_routed_layers() -> None:
    assert ffn_kinds({"moe_layers": [1, 3]}, 4, True) == ["dense", "moe", "dense", "moe"]


def test_a_per_layer_moe_frequency_list() -> None:
    assert ffn_kinds({"moe_layer_freq": [1, 0, 1]}, 3, True) == ["moe", "dense", "moe"]


@pytest.mark.parametrize("freq,expected", [
    (2, ["moe", "dense", "moe", "dense"]), (1, ["moe"] * 4), (0, ["moe"] * 4)])
def test_an_integer_moe_frequency_routes_every_freq_th_layer(freq: int,
                                                             expected: list[str]) -> None:
    assert ffn_kinds({"moe_layer_freq": freq}, 4, True) == expected


def test_llama4s_interleave_step_routes_every_step_th_layer() -> None:
    cfg = {"interleave_moe_layer_step": 4}
    assert ffn_kinds(cfg, 8, True) == _at(8, {3, 7}, "moe", "dense")


def test_jambas_expert_period_and_offset() -> None:
    """Jamba-v0.1: period 2, offset 1 → the 16 odd layers route."""
    raw = _raw(CORPUS / "ai21labs--jamba-v0.1")
    assert ffn_kinds(raw, 32, True) == _at(32, set(range(1, 32, 2)), "moe", "dense")
    assert ffn_kinds({"expert_layer_period": 2}, 4, True) == ["moe", "dense", "moe", "dense"]


@pytest.mark.parametrize("key", ["first_k_dense_replace", "first_dense_layers"])
def test_the_first_layers_stay_dense(key: str) -> None:
    assert ffn_kinds({key: 2}, 4, True) == ["dense", "dense", "moe", "moe"]


def test_deepseek_v3_keeps_three_dense_layers() -> None:
    raw = _raw(CORPUS / "deepseek-ai--deepseek-v3")
    assert ffn_kinds(raw, 61, True) == ["dense"] * 3 + ["moe"] * 58


def test_a_sparse_step_of_three_routes_every_third_layer() -> None:
    assert ffn_kinds({"decoder_sparse_step": 3}, 6, True) == _at(6, {2, 5}, "moe", "dense")


def test_a_model_without_experts_is_dense_everywhere() -> None:
    assert ffn_kinds({"moe_layers": [0]}, 2, False) == ["dense", "dense"]


@pytest.mark.parametrize("key", ["layers_block_type", "layer_types"])
@pytest.mark.parametrize("types,expected", [
    (["mamba", "moe"], ["none", "moe"]), (["mamba", "mlp"], ["none", "dense"]),
    (["MOE", "attention", "MLP"], ["moe", "none", "dense"])])
def test_a_nemotron_h_list_gives_each_layer_one_block(key: str, types: list[str],
                                                      expected: list[str]) -> None:
    assert ffn_kinds({key: types}, len(types), True) == expected
    assert ffn_kinds({key: types}, len(types), False) == expected


@pytest.mark.parametrize("pattern,expected", [
    ("ME", ["none", "moe"]), ("M-", ["none", "dense"]), ("M*E-", ["none", "none", "moe", "dense"])])
def test_a_nemotron_h_pattern_gives_each_layer_one_block(pattern: str,
                                                         expected: list[str]) -> None:
    assert ffn_kinds({"hybrid_override_pattern": pattern}, len(pattern), True) == expected


def test_a_list_without_feed_forward_entries_falls_through_to_the_routing_rules() -> None:
    cfg = {"layer_types": ["full_attention", "sliding_attention"], "moe_layers": [1]}
    assert ffn_kinds(cfg, 2, True) == ["dense", "moe"]
