"""The plan's monotonicity (issue 39, item 3): with the engine's batch settings fixed, more
GPU memory never gives fewer KV tokens, blocks or concurrent requests; more tensor
parallelism never puts more weight (or KV per token) on one GPU. Checked under Hypothesis on a
dense, a sliding-window, a MoE, an MXFP4 and two hybrid (Mamba / attention) configs of the
corpus.

With vLLM's *default* batch settings it does not hold, and the plan says so as vLLM does: on a
GPU of 70 GiB or more the default ``max_num_batched_tokens`` (2048 → 8192) and
``max_num_seqs`` (256 → 1024) step up, so the profile's activation peak grows and a
sliding-window layer keeps more blocks per request (window + batch)."""

from __future__ import annotations

import itertools
from functools import cache
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from benchlib.memory import plan
from benchlib.memory._arch import ModelArch
from benchlib.memory._load import load_model_config
from benchlib.memory._plan import PlanConfig

DATA = Path(__file__).resolve().parents[2] / "data"
MODELS = {m: DATA / "configs" / "corpus" / m for m in (
    "meta-llama--llama-3.1-8b-instruct", "google--gemma-2-9b-it", "qwen--qwen3-30b-a3b",
    "nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16", "ai21labs--jamba-v0.1")} | {
    "gpt-oss-20b": DATA / "vllm_logs" / "gpt-oss-20b-h100-tp1-u090"}


@cache
def _arch(name: str) -> ModelArch:
    return load_model_config(MODELS[name])


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(MODELS)), st.floats(8, 160), st.floats(0.05, 4),
       st.sampled_from([1024, 4096, 32768]), st.sampled_from(["auto", "fp8"]),
       st.sampled_from([(2048, 256), (8192, 1024)]))
def test_more_memory_never_gives_fewer_kv_tokens(name: str, gib: float, step: float,
                                                 max_len: int, kv_dtype: str,
                                                 batch: tuple[int, int]) -> None:
    """GPUs that differ only in memory, ``step`` GiB apart, twelve in a row, the batch
    settings pinned: each larger one's KV budget, blocks, tokens and concurrency are at least
    the smaller's, and a plan that fits still fits."""
    plans = [plan(PlanConfig(model=MODELS[name], gpu_memory_gib=gib + k * step,
                             max_model_len=max_len, kv_cache_dtype=kv_dtype,
                             max_num_batched_tokens=batch[0], max_num_seqs=batch[1]),
                  _arch(name))
             for k in range(12)]
    for small, big in itertools.pairwise(plans):
        assert small.capacity is not None and big.capacity is not None
        assert small.kv_budget_gib is not None and big.kv_budget_gib is not None
        assert big.kv_budget_gib >= small.kv_budget_gib
        assert big.capacity.num_blocks >= small.capacity.num_blocks
        assert big.capacity.kv_cache_tokens >= small.capacity.kv_cache_tokens
        assert big.capacity.kv_cache_tokens_legacy >= small.capacity.kv_cache_tokens_legacy
        assert big.capacity.max_concurrency >= small.capacity.max_concurrency
        assert big.fits or not small.fits


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(MODELS)), st.sampled_from(["auto", "fp8"]))
def test_more_tensor_parallelism_never_puts_more_on_one_gpu(name: str, weight_dtype: str
                                                            ) -> None:
    """TP 1, 2, 4, 8: the weights on one GPU, their experts' share and the KV bytes per token
    on one GPU never grow; the total weights stay the same up to per-GPU padding."""
    per_gpu, experts, kv = [], [], []
    for tp in (1, 2, 4, 8):
        p = plan(PlanConfig(model=MODELS[name], gpu_memory_gib=80, tp=tp, max_model_len=4096,
                            weight_dtype=weight_dtype), _arch(name))
        per_gpu.append(p.weights.per_gpu_bytes)
        experts.append(p.weights.experts_per_gpu_bytes)
        kv.append(p.layout.bytes_per_token + p.layout.sliding_bytes_per_token)
    assert per_gpu == sorted(per_gpu, reverse=True), per_gpu
    assert experts == sorted(experts, reverse=True), experts
    assert kv == sorted(kv, reverse=True), kv


def test_vllms_default_batch_step_at_70_gib_can_cost_kv_tokens() -> None:
    """Gemma-2-9B at 32k: from 69.9 to 70 GiB vLLM's defaults take the larger batch, the KV
    budget shrinks and each request's sliding-window blocks grow, so fewer tokens fit; with
    both batch settings pinned the larger GPU holds more."""
    name = "google--gemma-2-9b-it"

    def at(gib: float, **batch: int) -> tuple[int, int]:
        p = plan(PlanConfig(model=MODELS[name], gpu_memory_gib=gib, max_model_len=32768,
                            **batch), _arch(name))
        assert p.capacity is not None
        return p.overhead.max_num_batched_tokens, p.capacity.kv_cache_tokens

    (t_small, small), (t_big, big) = at(69.9), at(70.0)
    assert (t_small, t_big) == (2048, 8192) and big < small
    for tokens, seqs in ((2048, 256), (8192, 1024)):
        pinned = {"max_num_batched_tokens": tokens, "max_num_seqs": seqs}
        assert at(70.0, **pinned)[1] >= at(69.9, **pinned)[1]
