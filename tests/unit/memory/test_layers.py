"""Every layer pattern: interleaved MoE, hybrid Mamba / linear-attention / MLP-only layers,
parallel hybrids, shared experts, MTP counted apart, towers, and the KV each layer keeps.

Reference shapes are transformers' own config classes, whose defaults are documented as the
reference checkpoint's (DeepSeek-V3, Jamba-v0.1, Llama-4-Scout, Qwen3-Next-80B-A3B, gpt-oss,
Phi-3.5-MoE, Qwen1.5-MoE-A2.7B); the counts they must reproduce are the published ones."""

from __future__ import annotations

from typing import Any

import pytest
from transformers import AutoConfig

from benchlib.memory import kv_layout
from benchlib.memory._arch import ModelArch
from benchlib.memory._arch_read import arch_from_dict
from benchlib.memory._layers import ffn_kinds, mixer_kinds
from benchlib.memory._params import count_params


def _defaults(model_type: str, **overrides: Any) -> ModelArch:
    raw = AutoConfig.for_model(model_type, **overrides).to_dict()
    return arch_from_dict(raw, name=model_type)


def _published_active(a: ModelArch) -> int:
    p = count_params(a)
    return p.active + (0 if a.tie_embeddings else p.by_role["embed"])


@pytest.mark.parametrize(("model_type", "total", "active"), [
    ("deepseek_v3", 671e9, 37e9),      # DeepSeek-V3: 671 B total, 37 B activated
    ("jamba", 51.57e9, 12e9),          # Jamba-v0.1: 51.57 B (hub), 12 B active
    ("llama4_text", 107.8e9, 17e9),    # Llama-4-Scout text model: 109 B with its vision tower
    ("qwen3_next", 80e9, None),        # Qwen3-Next-80B-A3B
    ("phimoe", 41.9e9, 6.6e9),         # Phi-3.5-MoE: 41.9 B, 6.6 B active
    ("qwen2_moe", 14.3e9, 2.7e9),      # Qwen1.5-MoE-A2.7B: 14.3 B, 2.7 B activated
    ("gpt_oss", 116.83e9, None),       # gpt-oss-120b: 116.83 B
])
def test_reference_shapes_match_published_counts(model_type: str, total: float,
                                                 active: float | None) -> None:
    a = _defaults(model_type)
    p = count_params(a)
    assert p.total == pytest.approx(total, rel=0.02)
    if active is not None:
        assert _published_active(a) == pytest.approx(active, rel=0.05)


def test_deepseek_keeps_its_first_dense_layers_and_counts_mtp_apart() -> None:
    a = _defaults("deepseek_v3")
    assert [a.ffn(i) for i in range(4)] == ["dense", "dense", "dense", "moe"]
    p = count_params(a)
    assert a.mtp_layers == 1 and 10e9 < p.mtp < 14e9  # the hub's 685 B = 671 B + the MTP module
    assert p.total == pytest.approx(671e9, rel=0.01)  # MTP not in the total


def test_interleaved_moe_every_other_layer() -> None:
    # Llama-4-Maverick: interleave_moe_layer_step 2 → 24 of 48 layers route, the rest dense
    a = _defaults("llama4_text", interleave_moe_layer_step=2, num_local_experts=128)
    assert [a.ffn(i) for i in range(4)] == ["dense", "moe", "dense", "moe"]
    every = _defaults("llama4_text", num_local_experts=128)
    assert count_params(a).total < 0.6 * count_params(every).total


def test_qwen_moe_sparse_step_and_mlp_only_layers() -> None:
    cfg = {"model_type": "qwen2_moe", "num_experts": 8, "decoder_sparse_step": 2,
           "mlp_only_layers": [3]}
    assert ffn_kinds(cfg, 6, True) == ["dense", "moe", "dense", "dense", "dense", "moe"]


def test_jamba_periods_give_mamba_attention_and_moe_layers() -> None:
    a = _defaults("jamba")
    assert a.count("full") == 4 and a.count("mamba") == 28
    assert a.layer_kinds[4] == "full" and a.mamba is not None and a.mamba.kind == "mamba1"
    assert sum(a.ffn(i) == "moe" for i in range(a.num_layers)) == 16


def test_nemotron_h_pattern_string_layers_have_one_block_each() -> None:
    pattern = "M-M-M*-M-ME"
    raw = {"model_type": "nemotron_h", "hybrid_override_pattern": pattern,
           "num_hidden_layers": len(pattern), "hidden_size": 1024, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 1000,
           "intermediate_size": 4096, "mamba_num_heads": 32, "mamba_head_dim": 64,
           "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "n_routed_experts": 4,
           "num_experts_per_tok": 2, "moe_intermediate_size": 512}
    for fill in (True, False):
        a = arch_from_dict(raw, name="nemotron-h", fill=fill)
        assert a.layer_kinds.count("mamba") == 5 and a.count("full") == 1
        assert a.layer_kinds.count("none") == 5
        assert [a.ffn(i) for i in range(3)] == ["none", "dense", "none"]
        assert a.ffn(len(pattern) - 1) == "moe"
        lay = kv_layout(a)
        # KV per token from the one attention layer only; a state per request for 5 Mamba
        assert lay.bytes_per_token == 2 * 2 * 128 * 2
        assert lay.state_bytes_per_request > 0 and len(lay.layers) == 6
        p = count_params(a)
        assert p.by_role["attention"] and p.by_role["mamba"] and p.by_role["experts"]
        assert p.moe_layers == 1


def test_parallel_hybrid_has_attention_and_mamba_in_every_layer() -> None:
    a = _defaults("falcon_h1")
    assert a.parallel_mamba and a.count("full") == a.num_layers
    lay = kv_layout(a)
    assert sum(x.kind == "mamba" for x in lay.layers) == a.num_layers
    p = count_params(a)
    assert p.by_role["mamba"] and p.by_role["attention"]


def test_qwen3_next_linear_attention_keeps_state_not_kv() -> None:
    a = _defaults("qwen3_next")
    assert a.count("linear") == 36 and a.count("full") == 12
    assert a.moe is not None and a.moe.num_shared_experts == 1
    lay = kv_layout(a)
    assert lay.bytes_per_token == 12 * 2 * a.num_kv_heads * a.head_dim * 2


def test_lfm2_short_convolutions_are_stateful_mixers() -> None:
    types = ["conv", "conv", "full_attention", "conv"]
    a = _defaults("lfm2", num_hidden_layers=4, layer_types=types)
    assert a.layer_kinds == ("mamba", "mamba", "full", "mamba")
    assert a.mamba is not None and a.mamba.kind == "shortconv"


def test_gemma3_wrapper_counts_its_vision_tower_and_says_so() -> None:
    a = _defaults("gemma3")
    assert a.tower_params > 8e7  # SiglipVisionConfig's defaults: the 86 M base ViT
    assert count_params(a).by_role["towers"] == a.tower_params


def test_mixers_from_index_lists_and_periods() -> None:
    assert mixer_kinds({"attn_layer_indices": [1], "mamba_d_state": 16}, 3, "full") == [
        "mamba", "full", "mamba"]
    assert mixer_kinds({"full_attention_interval": 2}, 4, "full") == [
        "linear", "full", "linear", "full"]
    assert mixer_kinds({"attn_type_list": [0, 1]}, 2, "full") == ["linear", "full"]


def test_tied_embeddings_count_once() -> None:
    tied = _defaults("llama", tie_word_embeddings=True)
    untied = _defaults("llama", tie_word_embeddings=False)
    assert count_params(untied).total - count_params(tied).total == (
        tied.vocab_size * tied.hidden_size)
