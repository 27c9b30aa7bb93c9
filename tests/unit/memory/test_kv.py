"""KV bytes per token per GPU, vLLM's grouping, and the two "KV cache size" formulas."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.memory import kv_capacity, kv_layout, legacy_token_report, load_model_config

DATA = Path(__file__).resolve().parents[2] / "data" / "vllm_logs"
CORPUS = Path(__file__).resolve().parents[2] / "data" / "configs" / "corpus"
GIB = 1024**3


def test_full_attention_formula_and_tp() -> None:
    a = load_model_config(DATA / "qwen2-7b-a100-tp1-u025")  # 28 layers, 4 KV heads × 128
    assert kv_layout(a).bytes_per_token == 28 * 2 * 4 * 128 * 2
    assert kv_layout(a, tp=2).bytes_per_token == 28 * 2 * 2 * 128 * 2
    assert kv_layout(a, kv_cache_dtype="fp8").bytes_per_token == 28 * 2 * 4 * 128
    # 8 ranks > 4 KV heads: each keeps one head, so no further saving
    lay = kv_layout(a, tp=8)
    assert lay.bytes_per_token == 28 * 2 * 1 * 128 * 2
    assert any("replicated" in n for n in lay.notes)


def test_deepseek_v2_lite_mla_matches_vllms_kv_needed_line() -> None:
    # vllm-project/vllm#15871 (0.8.3, DeepSeek-V2-Lite-Chat, max_model_len 32768): "0.95 GiB KV
    # cache is needed" — one 512 + 64 latent per token and layer, 27 layers, BF16
    from benchlib.memory import arch_from_dict

    a = arch_from_dict({"model_type": "deepseek_v2", "num_hidden_layers": 27,
                        "hidden_size": 2048, "num_attention_heads": 16, "vocab_size": 102400,
                        "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                        "v_head_dim": 128, "q_lora_rank": None, "n_routed_experts": 64,
                        "num_experts_per_tok": 6, "moe_intermediate_size": 1408,
                        "n_shared_experts": 2, "first_k_dense_replace": 1,
                        "intermediate_size": 10944})
    lay = kv_layout(a)
    assert lay.bytes_per_token == 27 * (512 + 64) * 2
    assert round(lay.bytes_per_token * 32768 / GIB, 2) == 0.95
    assert a.ffn(0) == "dense" and a.ffn(1) == "moe"


def test_mla_is_per_layer_on_every_rank() -> None:
    a = load_model_config(DATA / "examples" / "glm-5.2")
    one = kv_layout(a)
    eight = kv_layout(a, tp=8)
    assert one.bytes_per_token == eight.bytes_per_token  # not split by TP
    assert eight.bytes_per_token == 78 * ((512 + 64) * 2 + 128 + 4)  # latent + DSA indexer
    assert kv_layout(a, kv_cache_dtype="fp8").bytes_per_token == 78 * (656 + 132)


def test_sliding_window_is_bounded_and_grouped() -> None:
    a = load_model_config(DATA / "gpt-oss-120b-a100-tp4-u080")
    lay = kv_layout(a, tp=4)
    assert lay.bytes_per_token == lay.sliding_bytes_per_token == 18 * 2 * 2 * 64 * 2
    cap = kv_capacity(lay, 45.32 * GIB, max_model_len=16384, max_num_batched_tokens=2048)
    assert cap.num_groups == 2 and cap.group_size == 18
    # full: 16384/16 = 1024 blocks; sliding: ceil((128-1+2048)/16) + 1 = 137
    assert cap.blocks_per_request == 1024 + 137
    assert cap.max_concurrency == pytest.approx(284.25, abs=0.01)


def test_linear_attention_state_per_request_and_block_size() -> None:
    a = load_model_config(DATA / "kimi-linear-48b-awq-3090-tp2")
    lay = kv_layout(a, tp=2)
    state = 3 * (32 * 128 * 3 // 2) * 2 + 16 * 128 * 128 * 4  # conv (bf16) + fp32 recurrent
    assert lay.state_bytes_per_request == 20 * state
    assert lay.bytes_per_token == 7 * (512 + 64) * 2
    assert lay.block_size == 960  # 64 × ceil(state / (64 × 1152 B))
    cap = kv_capacity(lay, 2.30 * GIB, max_model_len=120000, max_num_batched_tokens=64000)
    assert (cap.num_groups, cap.group_size, cap.padding_layers) == (4, 7, 1)
    assert cap.kv_cache_tokens_legacy == 75840


def test_uniform_model_reports_agree() -> None:
    a = load_model_config(DATA / "qwen3-32b-rtxpro6000-tp2")
    cap = kv_capacity(kv_layout(a, tp=2), 8.22 * GIB, max_model_len=32768)
    assert cap.kv_cache_tokens == cap.kv_cache_tokens_legacy == cap.num_blocks * 16
    assert legacy_token_report("0.10.1.1") == "blocks"
    assert legacy_token_report("0.27.1") == "concurrency"


def test_zero_budget_holds_nothing() -> None:
    a = load_model_config(DATA / "qwen3-14b-tp1")
    cap = kv_capacity(kv_layout(a), 0, max_model_len=4096)
    assert cap.num_blocks == 0 and cap.max_concurrency == 0 and cap.kv_cache_tokens == 0


def test_qwen3_5_gated_deltanet_state_follows_its_mamba_ssm_dtype() -> None:
    # Qwen3.5's config says mamba_ssm_dtype float32 and vLLM 0.26.0 makes that the SSM cache
    # dtype (Qwen3_5ForConditionalGenerationConfig); a GDN config without the key (Qwen3-Next)
    # keeps the recurrent state in the model dtype
    import json

    from benchlib.memory import arch_from_dict

    raw = json.loads((CORPUS / "qwen--qwen3.5-9b" / "config.json").read_text())
    assert raw["text_config"]["mamba_ssm_dtype"] == "float32"
    conv = (2 * 16 * 128 + 32 * 128) * 3 * 2  # (q, k, v channels) × (kernel − 1), bf16
    recurrent = 32 * 128 * 128  # value heads × value dim × key dim
    fp32 = kv_layout(arch_from_dict(raw))
    assert fp32.state_bytes_per_request == 24 * (conv + 4 * recurrent)
    assert fp32.block_size == 16 * -(-(conv + 4 * recurrent) // (16 * 2 * 4 * 256 * 2))  # 528
    del raw["text_config"]["mamba_ssm_dtype"]
    model_dtype = kv_layout(arch_from_dict(raw))
    assert model_dtype.state_bytes_per_request == 24 * (conv + 2 * recurrent)
    assert model_dtype.block_size < fp32.block_size
