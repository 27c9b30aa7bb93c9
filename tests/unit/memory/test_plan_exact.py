"""benchlib.memory._plan, its own arithmetic and words: the budget vLLM computes from the
total, the utilization, the weights and the overhead; every verdict and warning with the
figures it prints; the JSON summary key by key; TP and GPU defaults; MTP served or not; the
sweep. On stored configs (tests/data/configs), a Plan's parts (weights, layout, overhead) are
tested in their own modules; here, what the plan does with them."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.memory import PlanConfig, kv_capacity, load_model_config, plan
from benchlib.memory._plan import Plan, sweep_max_model_len

DATA = Path(__file__).resolve().parents[2] / "data" / "configs"
CORPUS = DATA / "corpus"
LLAMA = CORPUS / "meta-llama--llama-3.1-8b-instruct"
GIB = 1024**3


def _plan(model: Path = LLAMA, **kw: Any) -> Plan:
    kw.setdefault("vllm_version", "0.26.0")
    return plan(PlanConfig(model=model, **kw))


def test_the_budget_is_vllms_ceil_of_total_times_utilization_less_the_rest() -> None:
    p = _plan(gpu="H200", max_model_len=8192)
    usable = math.ceil(139.8 * GIB * 0.92) / GIB
    assert p.usable_gib == usable and p.memory_gib == 139.8 and p.bandwidth_gbs == 4800
    budget = usable - p.weights.per_gpu_gib - p.overhead.total_gib
    assert p.kv_budget_gib == budget and p.kv_budget_source == "predicted"
    cap = kv_capacity(p.layout, budget * GIB, max_model_len=8192,
                      max_num_batched_tokens=p.overhead.max_num_batched_tokens)
    assert p.capacity == cap and p.kv_cache_tokens == cap.kv_cache_tokens
    assert p.fits and p.verdict == (f"fits: {budget:.1f} GiB of KV per GPU holds "
                                    f"{cap.max_concurrency:.1f} requests of 8,192 tokens")
    assert p.warnings == [] and (p.tp, p.num_gpus, p.max_model_len) == (1, 1, 8192)
    assert [d.batch for d in p.decode] == [1, 32]
    assert {d.context_tokens for d in p.decode} == {8192}


def test_the_summary_key_by_key() -> None:
    p = _plan(gpu="H200", max_model_len=8192, num_gpus=4, tp=2, decode_context=1000,
              decode_batch=8)
    cap, d1, d8 = p.capacity, p.decode[0], p.decode[1]
    assert cap is not None and p.kv_budget_gib is not None and (d1.batch, d8.batch) == (1, 8)
    assert p.summary() == {
        "model": p.arch.name, "model_type": "llama", "gpu": "H200", "gpu_memory_gib": 139.8,
        "num_gpus": 4, "tp": 2, "gpu_memory_utilization": 0.92, "max_model_len": 8192,
        "total_params": p.params.total, "active_params": p.params.active,
        "params_source": p.params.source, "weights_scheme": "bfloat16",
        "weights_high_precision": ["attention", "embed", "lm_head", "mlp", "norm"],
        "weights_gib_total": round(p.weights.total_bytes / GIB, 3),
        "weights_gib_per_gpu": round(p.weights.per_gpu_bytes / GIB, 3),
        "kv_cache_dtype": "auto", "kv_bytes_per_token": 32 * 2 * 4 * 128 * 2,
        "kv_sliding_bytes_per_token": 0, "kv_state_bytes_per_request": 0, "block_size": 16,
        "overhead_gib_per_gpu": round(p.overhead.total_gib, 3),
        "usable_gib_per_gpu": round(math.ceil(139.8 * GIB * 0.92) / GIB, 3),
        "kv_budget_gib_per_gpu": round(p.kv_budget_gib, 3), "kv_budget_source": "predicted",
        "kv_blocks": cap.num_blocks, "kv_cache_tokens": cap.kv_cache_tokens,
        "max_concurrency": round(cap.max_concurrency, 3),
        "max_concurrency_all_replicas": round(cap.max_concurrency * 2, 3),
        "decode_context_tokens": 1000, "decode_floor_ms": round(d1.tpot_ms, 3),
        "decode_tokens_per_s_ceiling": round(d1.tokens_per_s, 1), "decode_batch": 8,
        "decode_floor_ms_at_batch": round(d8.tpot_ms, 3),
        "decode_tokens_per_s_ceiling_at_batch": round(d8.tokens_per_s, 1),
        "fits": True, "verdict": p.verdict, "warnings": [],
        "notes": p.weights.notes + p.layout.notes}


def test_without_a_gpu_the_plan_gives_weights_only() -> None:
    p = _plan(max_model_len=8192)
    assert (p.gpu, p.memory_gib, p.usable_gib, p.kv_budget_gib, p.capacity) == (
        None, None, None, None, None)
    assert p.kv_budget_source is None and p.kv_cache_tokens is None and p.decode == []
    assert p.fits and p.verdict == (f"weights {p.weights.per_gpu_gib:.1f} GiB per GPU; give "
                                    "--gpu or --gpu-memory-gib (or --kv-budget-gib) for the "
                                    "KV cache")
    s = p.summary()
    assert s["usable_gib_per_gpu"] is None and s["kv_budget_gib_per_gpu"] is None
    assert s["kv_blocks"] is None and s["max_concurrency"] is None
    assert s["max_concurrency_all_replicas"] is None and s["decode_floor_ms"] is None
    assert s["decode_batch"] is None and s["decode_floor_ms_at_batch"] is None
    assert s["decode_context_tokens"] is None and s["gpu"] is None
    assert sweep_max_model_len(p, [4096]) == []


def test_a_given_budget_is_used_as_is() -> None:
    p = _plan(max_model_len=8192, kv_budget_gib=10.0)
    assert (p.kv_budget_gib, p.kv_budget_source) == (10.0, "given")
    assert p.capacity == kv_capacity(p.layout, 10 * GIB, max_model_len=8192,
                                     max_num_batched_tokens=p.overhead.max_num_batched_tokens)
    assert p.summary()["kv_budget_gib_per_gpu"] == 10.0


def test_gpu_memory_and_bandwidth_without_a_named_gpu() -> None:
    p = _plan(gpu_memory_gib=80.0, gpu_bandwidth_gbs=2000.0, max_model_len=8192)
    assert (p.gpu, p.memory_gib, p.bandwidth_gbs) == (None, 80.0, 2000.0)
    assert p.usable_gib == math.ceil(80 * GIB * 0.92) / GIB
    named = _plan(gpu="H200", gpu_bandwidth_gbs=1000.0, max_model_len=8192)
    assert named.bandwidth_gbs == 1000.0


def test_tp_and_gpu_count_default_to_each_other() -> None:
    assert (_plan(num_gpus=2, max_model_len=8192).tp, _plan(num_gpus=2,
                                                           max_model_len=8192).num_gpus) == (2, 2)
    p = _plan(tp=2, max_model_len=8192)
    assert (p.tp, p.num_gpus) == (2, 2)


def test_max_model_len_defaults_to_the_configs_and_is_needed() -> None:
    assert _plan().max_model_len == 131072
    a = load_model_config(LLAMA / "config.json").model_copy(
        update={"max_position_embeddings": None})
    with pytest.raises(UsageError) as e:
        plan(PlanConfig(model=LLAMA), a)
    assert e.value.field == "--max-model-len"
    assert "no max_position_embeddings; give --max-model-len" in str(e.value)


def test_tp_warnings_name_the_heads() -> None:
    p = _plan(tp=3, max_model_len=8192)
    assert p.warnings == ["tp 3 does not divide 32 attention heads: vLLM refuses it",
                          "tp 3 and 8 KV heads do not divide either way: vLLM refuses it"]
    assert _plan(tp=16, max_model_len=8192).warnings == []  # 16 is a multiple of 8 KV heads
    assert _plan(tp=4, max_model_len=8192).warnings == []
    mla = _plan(CORPUS / "deepseek-ai--deepseek-v2-lite-chat", tp=16, max_model_len=8192)
    assert not any("KV heads" in w for w in mla.warnings)


def test_weights_alone_over_the_usable_memory() -> None:
    p = _plan(CORPUS / "meta-llama--llama-3.1-70b-instruct", gpu="H100-SXM",
              max_model_len=8192)
    w, usable = p.weights.per_gpu_gib, math.ceil(79.18 * GIB * 0.92) / GIB
    assert not p.fits and p.verdict == (
        f"OOM risk: weights alone are {w:.1f} GiB per GPU, more than the {usable:.1f} GiB "
        "vLLM may use (79.2 GiB × utilization); quantize (fp8 halves, int4 quarters) or add "
        "GPUs")


def test_no_budget_left_is_out_of_memory_at_zero() -> None:
    p = _plan(max_model_len=8192, kv_budget_gib=0.0)
    assert not p.fits and p.verdict == (
        "OOM risk: no memory left for the KV cache (0.00 GiB after weights and overhead); "
        "vLLM stops with 'No available memory for the cache blocks'")
    neg = _plan(max_model_len=8192, kv_budget_gib=-1.5)
    assert not neg.fits and "(-1.50 GiB after" in neg.verdict
    assert neg.capacity is not None and neg.capacity.budget_bytes == 0


def test_one_request_that_does_not_fit() -> None:
    """0.5 GiB of 128 KiB per token holds 4096 tokens: half a request of 8192."""
    p = _plan(max_model_len=8192, kv_budget_gib=0.5)
    assert p.capacity is not None and p.capacity.max_concurrency == 0.5
    assert not p.fits and p.verdict == (
        "OOM risk: one request at max_model_len 8,192 needs more KV than the 0.50 GiB budget; "
        "vLLM refuses to start (about 4,096 tokens would fit): lower --max-model-len, use fp8 "
        "KV or more GPUs")


@pytest.mark.parametrize("budget,fits,warned", [(1.0, True, True), (1.5, True, True),
                                                 (2.0, True, False)])
def test_fewer_than_two_requests_warn(budget: float, fits: bool, warned: bool) -> None:
    """1 GiB of 128 KiB per token holds 8192 tokens: one request."""
    p = _plan(max_model_len=8192, kv_budget_gib=budget)
    assert p.fits is fits
    conc = budget
    expected = [f"only {conc:.2f} requests fit at max_model_len 8,192: long prompts queue or "
                "get preempted"]
    assert p.warnings == (expected if warned else [])


def test_a_checkpoint_index_far_from_the_estimate_warns() -> None:
    a = load_model_config(LLAMA / "config.json")
    total = plan(PlanConfig(model=LLAMA, max_model_len=8192), a).weights.total_bytes
    far = a.model_copy(update={"checkpoint_bytes": int(total / 1.06)})
    p = plan(PlanConfig(model=LLAMA, max_model_len=8192), far)
    assert p.warnings == ["architecture estimate and checkpoint index differ by 6% (extra "
                          "tensors such as MTP or vision layers?)"]
    near = a.model_copy(update={"checkpoint_bytes": int(total / 1.04)})
    assert plan(PlanConfig(model=LLAMA, max_model_len=8192), near).warnings == []
    fp8 = plan(PlanConfig(model=LLAMA, max_model_len=8192, weight_dtype="fp8"), far)
    assert fp8.warnings == []


def test_assumed_keys_and_towers_are_warned() -> None:
    a = load_model_config(LLAMA / "config.json").model_copy(update={
        "assumed": ("rope_theta 10000", "head_dim 128"), "defaults_from": "llama",
        "model_type": "llama9", "tower_params": 400_000_000})
    p = plan(PlanConfig(model=LLAMA, max_model_len=8192), a)
    assert p.warnings == [
        "llama config (model_type 'llama9' unknown to the installed transformers): assumed "
        "rope_theta 10000; head_dim 128",
        "vision/audio towers counted in the weights: 0.40 B parameters, estimated from their "
        "shape"]
    text = plan(PlanConfig(model=LLAMA, max_model_len=8192, language_model_only=True), a)
    assert text.arch.tower_params == 0 and len(text.warnings) == 1
    assert text.weights.notes[0] == ("--language-model-only: the 0.40 B-parameter vision/audio "
                                     "towers are not built")


def test_deepseek_v3s_mtp_layer_is_warned_about_or_loaded() -> None:
    folder = CORPUS / "deepseek-ai--deepseek-v3"
    off = _plan(folder, gpu="H200", num_gpus=8, max_model_len=4096)
    p = off.params
    gib = p.mtp * off.weights.total_bytes / p.total / GIB / 8
    assert (f"1 MTP layer(s) ({p.mtp / 1e9:.2f} B parameters) not counted: serving with "
            f"--speculative-config method mtp adds about {gib:.2f} GiB per GPU") in off.warnings
    on = _plan(folder, gpu="H200", num_gpus=8, max_model_len=4096, speculative="mtp")
    extra = int(p.mtp * off.weights.total_bytes / p.total)
    assert on.weights.total_bytes == off.weights.total_bytes + extra
    assert on.weights.per_gpu_bytes == off.weights.per_gpu_bytes + extra // 8
    assert on.weights.notes[-1] == (f"{p.mtp / 1e9:.2f} B MTP parameters load for "
                                    "--speculative-config method mtp")
    assert not any("MTP layer(s)" in w for w in on.warnings)
    assert on.layout.bytes_per_token == 62 * 576 * 2


def test_speculative_tokens_count_only_when_speculating() -> None:
    folder = CORPUS / "qwen--qwen3.5-9b"
    plain = _plan(folder, max_model_len=8192, num_speculative_tokens=3)
    spec = _plan(folder, max_model_len=8192, num_speculative_tokens=3, speculative="ngram")
    conv = 2 * 16 * 128 + 32 * 128
    assert spec.layout.state_bytes_per_request - plain.layout.state_bytes_per_request == (
        24 * conv * 3 * 2)


def test_the_gated_deltanet_prefill_warning_is_for_the_v1_runner_only() -> None:
    folder = CORPUS / "qwen--qwen3.5-9b"
    v1 = _plan(folder, max_model_len=8192)
    assert any(w.startswith("activation peak:") and "Gated-DeltaNet" in w for w in v1.warnings)
    legacy = _plan(folder, max_model_len=8192, vllm_version="0.12")
    assert not any("Gated-DeltaNet" in w for w in legacy.warnings)


def test_one_decode_row_when_the_batch_is_one() -> None:
    p = _plan(gpu="H200", max_model_len=8192, decode_batch=1)
    assert [d.batch for d in p.decode] == [1]
    s = p.summary()
    assert s["decode_batch"] == 1 and s["decode_floor_ms"] == s["decode_floor_ms_at_batch"]


def test_vllm_before_0_12_reports_blocks() -> None:
    p = _plan(gpu="H200", max_model_len=8192, vllm_version="0.10.1")
    assert p.token_report == "blocks" and p.capacity is not None
    assert p.kv_cache_tokens == p.capacity.kv_cache_tokens_legacy
    assert p.usable_gib == math.ceil(139.8 * GIB * 0.9) / GIB


def test_the_sglang_pool_joins_the_summary() -> None:
    p = _plan(gpu="H200", max_model_len=8192, sglang_pool=True, mem_fraction_static=0.8)
    assert p.sglang is not None
    s = p.summary()
    assert s["sglang_mem_fraction_static"] == 0.8 == p.sglang.mem_fraction_static
    assert s["sglang_max_total_num_tokens"] == p.sglang.max_total_num_tokens
    assert "sglang_mem_fraction_static" not in _plan(gpu="H200", max_model_len=8192).summary()
    assert _plan(max_model_len=8192, sglang_pool=True).sglang is None


def test_the_sweep_keeps_budget_and_layout() -> None:
    p = _plan(gpu="H200", max_model_len=8192)
    assert p.kv_budget_gib is not None
    rows = sweep_max_model_len(p, [4096, 32768])
    for n, tokens, conc in rows:
        c = kv_capacity(p.layout, p.kv_budget_gib * GIB, max_model_len=n,
                        max_num_batched_tokens=p.overhead.max_num_batched_tokens)
        assert (tokens, conc) == (c.kv_cache_tokens, c.max_concurrency)
    assert [n for n, _, _ in rows] == [4096, 32768]
    neg = _plan(max_model_len=8192, kv_budget_gib=-1.0)
    assert sweep_max_model_len(neg, [4096]) == [(4096, 0, 0.0)]
