"""Decode floor, text ↔ tokens, the GPU catalogue and the notebook's figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.memory import (
    GPUS,
    PlanConfig,
    count_tokens,
    decode_floor,
    detect_language,
    experts_touched,
    find_gpu,
    kv_layout,
    load_model_config,
    plan,
    plan_figures,
    text_for_tokens,
    weight_plan,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "vllm_logs"


def test_experts_touched() -> None:
    assert experts_touched(128, 4, 1) == pytest.approx(4)
    assert experts_touched(128, 4, 1000) == pytest.approx(128, rel=1e-3)
    assert 4 < experts_touched(128, 4, 8) < 32


def test_decode_floor_dense_is_weights_over_bandwidth() -> None:
    a = load_model_config(DATA / "llama-3.1-8b-h100-tp1-u090")
    w, lay = weight_plan(a), kv_layout(a)
    d = decode_floor(a, w, lay, bandwidth_gbs=3350, batch=1, context_tokens=1)
    read = w.per_gpu_bytes - w.bytes_by_role["embed"]  # the lookup reads one row
    assert d.tpot_ms == pytest.approx((read + lay.bytes_per_token) / 3350e9 * 1e3, rel=1e-6)
    long = decode_floor(a, w, lay, bandwidth_gbs=3350, batch=8, context_tokens=32768)
    assert long.kv_bytes == 8 * 32768 * lay.bytes_per_token
    assert long.tokens_per_s > d.tokens_per_s  # batching amortizes the weights


def test_decode_floor_moe_reads_more_experts_at_batch() -> None:
    a = load_model_config(DATA / "gpt-oss-120b-a100-tp4-u080")
    w, lay = weight_plan(a), kv_layout(a)
    one = decode_floor(a, w, lay, bandwidth_gbs=4800, batch=1, context_tokens=1)
    many = decode_floor(a, w, lay, bandwidth_gbs=4800, batch=64, context_tokens=1)
    assert many.weight_bytes > 4 * one.weight_bytes
    assert one.weight_bytes < 0.2 * w.per_gpu_bytes  # 4 of 128 experts


def test_text_rules_match_seed_000() -> None:
    en = text_for_tokens(32768, "en")
    assert en.words == (24576, 24576) and en.kilobytes[0] == pytest.approx(128)
    ko = text_for_tokens(32768, "ko")
    assert ko.chars == (39322, 49152)
    assert ko.kilobytes == pytest.approx((144, 160))
    assert detect_language("안녕하세요 반갑습니다") == "ko"
    assert detect_language("hello world") == "en"


def test_count_tokens_rule_and_tokenizer(tokenizer: Any) -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20
    rule = count_tokens(text)
    assert rule.method == "rule of thumb" and rule.rule_range[0] <= rule.tokens
    real = count_tokens(text, tokenizer)
    assert real.method == "tokenizer"
    assert real.tokens == len(tokenizer.encode(text, add_special_tokens=False))
    assert real.rule_estimate == rule.tokens


def test_gpu_catalogue() -> None:
    names = {g.name for g in GPUS}
    for want in ("B200", "H200", "H100-SXM", "H100-PCIe", "A100-40GB", "A100-80GB", "L40S",
                 "RTX-3090", "RTX-4090", "RTX-5090", "CMP-170HX"):
        assert want in names
    assert all(g.source and g.bandwidth_gbs > 0 and g.memory_gib > 0 for g in GPUS)
    assert find_gpu("h100").name == "H100-SXM" and find_gpu("rtx 4090").name == "RTX-4090"
    with pytest.raises(UsageError):
        find_gpu("voodoo2")


def test_plan_figures() -> None:
    pytest.importorskip("matplotlib")
    p = plan(PlanConfig(model=DATA / "gpt-oss-20b-h100-tp1-u090", gpu="H100",
                        max_model_len=32768))
    stack, capacity = plan_figures(p)
    assert stack.axes and capacity.axes
    legend = stack.axes[0].get_legend()
    assert legend is not None
    labels = [t.get_text() for t in legend.get_texts()]
    assert any(label.startswith("weights") for label in labels)
