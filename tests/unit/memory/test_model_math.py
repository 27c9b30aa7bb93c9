"""Config parsing, parameter counts and weight bytes by quantization format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.memory import (
    arch_from_dict,
    count_params,
    load_model_config,
    weight_plan,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "vllm_logs"
GIB = 1024**3


def _cfg(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name / "config.json").read_text())
    return data


def test_dense_gqa_config() -> None:
    a = load_model_config(DATA / "qwen2-7b-a100-tp1-u025")
    assert (a.num_layers, a.num_kv_heads, a.head_dim) == (28, 4, 128)
    assert set(a.layer_kinds) == {"full"}  # sliding_window is there but switched off
    p = count_params(a)
    assert p.total == pytest.approx(7.6159e9, rel=0.003)  # Qwen2-7B's published 7.62 B
    assert p.source == "architecture"


def test_sliding_window_moe_config() -> None:
    a = load_model_config(DATA / "gpt-oss-120b-a100-tp4-u080" / "config.json")
    assert a.count("sliding") == 18 and a.count("full") == 18 and a.sliding_window == 128
    assert a.moe is not None and (a.moe.num_experts, a.moe.top_k) == (128, 4)
    p = count_params(a)
    assert p.total == pytest.approx(116.8e9, rel=0.005)  # OpenAI's model card
    assert p.active == pytest.approx(5.1e9, rel=0.03)


def test_mla_and_linear_attention_config() -> None:
    a = load_model_config(DATA / "kimi-linear-48b-awq-3090-tp2")
    assert a.count("mla") == 7 and a.count("linear") == 20
    assert a.mla is not None and a.mla.kv_lora_rank == 512
    assert a.linear is not None and a.linear.kind == "kda"
    assert count_params(a).total == pytest.approx(49e9, rel=0.05)


def test_glm5_example_is_744b() -> None:
    a = load_model_config(DATA / "examples" / "glm-5.2")
    p = count_params(a)
    assert p.total == pytest.approx(744e9, rel=0.01)
    assert p.active == pytest.approx(40e9, rel=0.05)
    assert weight_plan(a).total_bytes / 1e12 == pytest.approx(1.488, rel=0.01)  # seed 000


def test_nested_text_config_and_index(tmp_path: Path) -> None:
    inner = _cfg("qwen3-14b-tp1")
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "wrapper", "text_config": inner, "vision_config": {"depth": 2}}))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 29_536_614_400, "total_parameters": 14_768_307_200},
         "weight_map": {}}))
    a = load_model_config(tmp_path)
    assert a.num_layers == 40 and a.checkpoint_bytes == 29_536_614_400
    p = count_params(a)
    assert p.total == 14_768_307_200 and p.source == "safetensors index"


def test_hybrid_gdn_config() -> None:
    cfg = {"model_type": "qwen3_next", "num_hidden_layers": 8, "hidden_size": 2048,
           "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
           "vocab_size": 151936, "intermediate_size": 5120, "full_attention_interval": 4,
           "linear_num_value_heads": 32, "linear_num_key_heads": 16, "linear_key_head_dim": 128,
           "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
           "num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
           "shared_expert_intermediate_size": 512}
    a = arch_from_dict(cfg)
    assert a.layer_kinds == ("linear", "linear", "linear", "full") * 2
    assert a.linear is not None and a.linear.kind == "gdn" and not a.linear.recurrent_fp32
    assert a.moe is not None and a.moe.num_shared_experts == 1


def test_bad_configs_name_the_flag(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as e:
        load_model_config(tmp_path / "missing")
    assert e.value.field == "--model-config"
    (tmp_path / "config.json").write_text('{"model_type": "x"}')
    with pytest.raises(UsageError, match="not a decoder config") as e:
        load_model_config(tmp_path)
    # the file given, and the key that is missing
    assert str(tmp_path / "config.json") in str(e.value)
    assert "no num_hidden_layers / n_layer / num_layers / n_layers (model_type 'x')" in str(
        e.value)
    (tmp_path / "config.json").write_text('{"num_hidden_layers": "many", "hidden_size": 8}')
    with pytest.raises(UsageError, match="num_hidden_layers / n_layer / num_layers / n_layers is 'many'"):
        load_model_config(tmp_path)


def _with_quant(q: dict[str, Any]) -> Any:
    return arch_from_dict({**_cfg("llama-3.1-8b-h100-tp1-u090"), "quantization_config": q})


@pytest.mark.parametrize(("quant", "bytes_per_param"), [
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, 1 + 4 / 128**2),
    ({"quant_method": "fp8"}, 1.0),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
     0.5 + 2 / 128 + 0.5 / 128),
    ({"quant_method": "gptq", "bits": 4, "group_size": 32, "sym": True}, 0.5 + 2 / 32 + 0.5 / 32),
    ({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {
        "g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                 "group_size": 32, "symmetric": True}}}},
     0.5 + 2 / 32),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}, 0.5 + 1 / 16),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, 0.5 + 4 / 64),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, 1.0),
])
def test_quantization_formats(quant: dict[str, Any], bytes_per_param: float) -> None:
    w = weight_plan(_with_quant(quant))
    assert w.bytes_per_param["mlp"] == pytest.approx(bytes_per_param)
    assert w.bytes_per_param["embed"] == 2.0 and w.bytes_per_param["norm"] == 2.0
    assert "embed" in w.high_precision and "mlp" not in w.high_precision


def test_ignore_list_keeps_roles_in_bf16() -> None:
    w = weight_plan(_with_quant({"quant_method": "fp8", "ignored_layers": ["lm_head",
                                                                          "re:.*self_attn.*"]}))
    assert w.bytes_per_param["attention"] == 2.0 and w.bytes_per_param["mlp"] == 1.0
    assert "attention" in w.high_precision and "lm_head" in w.high_precision


def test_mxfp4_experts_only_and_padding() -> None:
    a = load_model_config(DATA / "gpt-oss-20b-h100-tp1-u090")
    w = weight_plan(a)
    assert w.bytes_per_param["experts"] == pytest.approx(0.5 + 1 / 32)
    assert w.bytes_per_param["attention"] == 2.0 and w.bytes_per_param["router"] == 2.0
    # 12.8 GiB checkpoint (OpenAI) and vLLM's padded 13.47 GiB resident
    assert w.total_bytes / GIB == pytest.approx(12.8, rel=0.01)
    assert w.per_gpu_bytes / GIB == pytest.approx(13.47, rel=0.01)


def test_override_and_tp_sharding() -> None:
    a = load_model_config(DATA / "llama-3.1-8b-h100-tp1-u090")
    bf16 = weight_plan(a)
    fp8 = weight_plan(a, weight_dtype="fp8")
    assert fp8.total_bytes < 0.6 * bf16.total_bytes
    assert weight_plan(a, tp=2).per_gpu_bytes == pytest.approx(bf16.per_gpu_bytes / 2, rel=0.01)
    with pytest.raises(UsageError) as e:
        weight_plan(a, weight_dtype="int3")
    assert e.value.field == "--weight-dtype"
