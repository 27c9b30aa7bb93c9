"""benchlib.memory._weights at its edges: keys read only when they differ from the default
(a compressed-tensors NVFP4 group of 32, AWQ's ``w_bit`` 8, GPTQ's zero points), group sizes
0 and 1, MXFP4 padding one past a multiple, KV projections copied at TP 12 and with sliding
layers, a MoE model that needs no padding, the notes' lists and signs, a GGUF's odd total.
Stored configs (tests/data), changed in one field where no checkpoint has the edge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchlib.memory import load_model_config, weight_plan
from benchlib.memory._arch import ModelArch

DATA = Path(__file__).resolve().parents[2] / "data"
CORPUS = DATA / "configs" / "corpus"
GIB = 1024**3


def _arch(name: str, **update: Any) -> ModelArch:
    return load_model_config(CORPUS / name / "config.json").model_copy(update=update)


LLAMA = _arch("meta-llama--llama-3.1-8b-instruct")


def _mlp_bytes(q: dict[str, Any]) -> float:
    return weight_plan(LLAMA.model_copy(update={"quantization": q})).bytes_per_param["mlp"]


def test_keys_that_differ_from_their_defaults() -> None:
    ct = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {
        "num_bits": 4, "type": "float", "group_size": 32}}}}
    assert _mlp_bytes(ct) == 0.5 + 1 / 32
    assert _mlp_bytes({"quant_method": "awq", "w_bit": 8, "group_size": 128}) == (
        1 + 2 / 128 + 1 / 128)
    # GPTQ stores packed zero points even when the config says none
    assert _mlp_bytes({"quant_method": "gptq", "bits": 4, "group_size": 128,
                       "zero_point": False}) == 0.5 + 2 / 128 + 0.5 / 128


@pytest.mark.parametrize("group,per", [(0, 0.5 + 2 / 4096 + 0.5 / 4096),
                                       (1, 0.5 + 2 + 0.5)])
def test_group_size_0_means_per_channel_and_1_is_a_group(group: int, per: float) -> None:
    assert _mlp_bytes({"quant_method": "gptq", "bits": 4, "group_size": group}) == per


def test_mxfp4_pads_one_past_a_multiple_to_the_next() -> None:
    """gpt-oss-20b with hidden 2305 (→ 2560) and an expert slice of 577 (→ 640)."""
    a = load_model_config(DATA / "vllm_logs" / "gpt-oss-20b-h100-tp1-u090")
    assert a.moe is not None
    odd = a.model_copy(update={"hidden_size": 2305, "moe": a.moe.model_copy(
        update={"expert_intermediate_size": 577})})
    w = weight_plan(odd)
    pad = 2560 / 2305 * 640 / 577
    assert w.experts_per_gpu_bytes == int(w.bytes_by_role["experts"] * pad)


def test_a_moe_model_that_is_not_mxfp4_is_never_padded() -> None:
    """Nemotron-3-Nano's hidden 2688 is no multiple of 256, but its experts are BF16."""
    w = weight_plan(_arch("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16"))
    assert w.experts_per_gpu_bytes == w.bytes_by_role["experts"] and w.notes == []


def test_mxfp4_without_padding_says_nothing_of_it() -> None:
    w = weight_plan(_arch("qwen--qwen3-30b-a3b"), weight_dtype="mxfp4")  # 2048 and 768
    assert w.notes == ["--weight-dtype mxfp4 overrides the checkpoint's quantization_config"]
    assert w.experts_per_gpu_bytes == w.bytes_by_role["experts"]


def test_kv_projections_at_a_tp_that_is_no_multiple_of_the_kv_heads() -> None:
    """TP 12 on 8 KV heads: 12 // 8 = 1 copy of K and V per rank."""
    b = weight_plan(LLAMA).bytes_by_role
    kv = 2 * 4096 * 128 * 8 * 2 * 32
    rest = sum(v for r, v in b.items() if r not in ("attention", "norm"))
    assert weight_plan(LLAMA, tp=12).per_gpu_bytes == int(
        (b["attention"] - kv) / 12 + kv / 12 + rest / 12 + b["norm"])


def test_kv_projections_of_sliding_layers_are_copied_too() -> None:
    """gpt-oss-20b at TP 16: 12 full and 12 sliding layers, 8 KV heads × 64 on hidden 2880,
    copied twice; MXFP4 experts padded (2880 → 3072, 180 → 192 per rank)."""
    a = load_model_config(DATA / "vllm_logs" / "gpt-oss-20b-h100-tp1-u090")
    b = weight_plan(a).bytes_by_role
    kv = 2 * 2880 * 64 * 8 * 2 * 24
    pad = 3072 / 2880 * 192 / 180
    per_gpu = ((b["attention"] - kv) / 16 + kv * 2 / 16 + (b["embed"] + b["lm_head"]) / 16
               + b["experts"] / 16 * pad + b["router"] + b["norm"])
    assert weight_plan(a, tp=16).per_gpu_bytes == int(per_gpu)


def test_the_ignore_note_lists_roles_with_commas() -> None:
    a = _arch("deepseek-ai--deepseek-v2-lite-chat", quantization={
        "quant_method": "fp8", "ignore": ["lm_head", "re:.*mlp.gate$"]})
    assert weight_plan(a).notes == [
        "kept in high precision by the config's ignore list: lm_head, router"]


def test_the_checkpoint_comparison_is_a_signed_percentage() -> None:
    total = weight_plan(LLAMA).total_bytes
    for ckpt, pct in ((total // 4, "+300.0%"), (total * 2, "-50.0%")):
        w = weight_plan(LLAMA.model_copy(update={"checkpoint_bytes": ckpt}))
        assert w.notes[0].endswith(f"({pct})")


def test_a_gguf_total_that_tp_does_not_divide() -> None:
    a = LLAMA.model_copy(update={"quantization": {"quant_method": "gguf"},
                                 "checkpoint_bytes": 8_000_000_001})
    w = weight_plan(a, tp=2)
    assert (w.total_bytes, w.per_gpu_bytes) == (8_000_000_001, 4_000_000_000)
