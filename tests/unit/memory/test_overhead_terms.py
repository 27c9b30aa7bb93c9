"""benchlib.memory._overhead, term by term in exact bytes: each figure here is worked out by hand
from a stored config (tests/data/configs/corpus) and vLLM 0.26.0's formula, so a changed
constant, bound or operand shows as a wrong byte count, not as a few percent of slack.

Where a real config's largest term hides the one under test (a dense MLP outweighs every MoE
or recurrent projection at TP 1), the test drops the dense MLP from that config (``_no_mlp``)
so the term under test is the largest one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchlib.memory import find_gpu, load_model_config
from benchlib.memory._arch import ModelArch
from benchlib.memory._overhead import (
    CUBLAS_WORKSPACE,
    GIB,
    _mla_workspace_rows,
    forward_transient,
    legacy_overhead,
    model_runner,
    moe_workspace,
    overhead_model,
    vllm_era,
)

CORPUS = Path(__file__).resolve().parents[2] / "data" / "configs" / "corpus"
T = 8192  # the profile's batched tokens on a big GPU


def _arch(name: str) -> ModelArch:
    return load_model_config(CORPUS / name / "config.json")


def _no_mlp(a: ModelArch, **more: Any) -> ModelArch:
    return a.model_copy(update={"intermediate_size": 0, **more})


@pytest.mark.parametrize("version,era", [
    ("0.10.9", "legacy"), ("v0.10.2", "legacy"), ("0.9", "legacy"), ("0.11.0", "v0.11"),
    ("0.11", "v0.11"), ("0.20.9", "v0.11"), ("v0.20", "v0.11"), ("0.21.0", "current"),
    ("0.100", "current"), ("1.0", "current"), ("main", "current"), ("", "current"),
    ("X0.10", "current")])  # only a leading v is skipped
def test_the_vllm_era_changes_exactly_at_0_11_and_0_21(version: str, era: str) -> None:
    """A version that is no number (a source build's ``main``) is taken as current."""
    assert vllm_era(version) == era


@pytest.mark.parametrize("name,spec,runner", [
    ("meta-llama--llama-3.1-8b-instruct", "suffix", "v1"),
    ("qwen--qwen1.5-moe-a2.7b", None, "v2"),                 # qwen2_moe
    ("ibm-granite--granite-3.0-1b-a400m-base", None, "v2"),  # granitemoe
    ("ai21labs--jamba-v0.1", None, "v1"),                    # a Mamba hybrid
])
def test_the_runner_rule_for_the_other_exceptions(name: str, spec: str | None,
                                                  runner: str) -> None:
    assert model_runner(_arch(name), "0.26.0", spec) == runner
    assert model_runner(_arch(name), "0.25.9", None) == "v1"


def test_moe_workspace_takes_the_larger_of_each_pair() -> None:
    """Jamba: I 14336 > H 4096, top-2, so the slice per rank counts; GLM-4.7-Flash: I 1536 <
    H 2048 < 2I 3072, so H and 2I."""
    jamba = _arch("ai21labs--jamba-v0.1")
    assert moe_workspace(jamba, T, 1) == 2 * T * 2 * (14336 + 28672) == 1_409_286_144
    assert moe_workspace(jamba, T, 2) == 2 * T * 2 * (7168 + 14336) == 704_643_072
    glm = _arch("zai-org--glm-4.7-flash")
    assert moe_workspace(glm, T, 1) == 2 * T * 4 * (2048 + 3072) == 335_544_320


def test_a_dense_gated_mlp_is_llamas_largest_live_set() -> None:
    """Llama-3.1-8B: H 4096, I 14336 (gated: three projections), 32 heads, 8 KV heads × 128."""
    a = _arch("meta-llama--llama-3.1-8b-instruct")
    assert forward_transient(a, T, 1) == 2 * T * (4096 + 3 * 14336) == 771_751_936
    assert forward_transient(a, T, 2) == 2 * T * (4096 + 3 * 7168) == 419_430_400
    # TP 16: one KV head and 2 query heads per rank; attention outweighs the 896-wide MLP
    assert forward_transient(a, T, 16) == 2 * T * (2 * 4096 + (2 * 2 + 2 * 1) * 128)


def test_a_plain_mlp_has_two_projections() -> None:
    a = _arch("facebook--opt-125m")  # H 768, I 3072, not gated
    assert forward_transient(a, T, 1) == 2 * T * (768 + 2 * 3072) == 113_246_208


def test_attention_wins_without_an_mlp() -> None:
    a = _no_mlp(_arch("meta-llama--llama-3.1-8b-instruct"))
    assert forward_transient(a, T, 1) == 2 * T * (2 * 4096 + (2 * 32 + 2 * 8) * 128)
    assert forward_transient(a, T, 4) == 2 * T * (2 * 4096 + (2 * 8 + 2 * 2) * 128)


def test_the_moe_layer_with_its_router_and_topk_buffers() -> None:
    """Qwen3-30B-A3B at TP 8 without a dense MLP: 3·H of hidden states, 4 bytes per token
    and expert (router logits), 8 per token and chosen expert."""
    a = _no_mlp(_arch("qwen--qwen3-30b-a3b"))
    assert forward_transient(a, T, 8) == 2 * T * 3 * 2048 + T * 128 * 4 + T * 8 * 8


def test_shared_experts_add_their_slice() -> None:
    """Nemotron-3-Nano at TP 8: one shared expert of 3712 (464 per rank) beside 128 routed,
    top-6; its MoE layer is the largest."""
    a = _arch("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16")
    assert forward_transient(a, T, 8) == 2 * T * (3 * 2688 + 3 * 464) + T * 128 * 4 + T * 6 * 8


def test_a_mamba2_layers_projections() -> None:
    """Nemotron-3-Nano's Mamba2 mixer at TP 8: 2·4096 + 2·8·128 + 64 = 10304 wide, 1288 per
    rank, beside the residual stream (2·2688): just above its attention block (13312·T)."""
    a = _no_mlp(_arch("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16"), moe=None)
    assert forward_transient(a, T, 8) == 2 * T * (2 * 2688 + 1288) == 13328 * T


def test_a_gated_deltanet_layers_projections() -> None:
    """Qwen3.5-9B: 2·16·128 keys and queries + 2·32·128 values and gates = 12288."""
    a = _no_mlp(_arch("qwen--qwen3.5-9b"))
    assert forward_transient(a, T, 1) == 2 * T * (2 * 4096 + 12288) == 40960 * T
    assert forward_transient(a, T, 2) == 2 * T * (2 * 4096 + 6144)


def test_mla_attention_and_its_chunked_prefill_workspace() -> None:
    """GLM-4.7-Flash: 20 heads, nope 192 + rope 64, latent 512, v 256; the workspace keeps
    65536 rows of 20 × (192 + 256) bf16."""
    a = _arch("zai-org--glm-4.7-flash")
    block = 2 * T * (2 * 2048 + 20 * (192 + 64) + 512 + 64 + 20 * 256)
    assert forward_transient(a, T, 1) == block + 2 * 65536 * 20 * 448 == 1_418_723_328
    short = forward_transient(a, T, 1, max_model_len=1024, seqs=256)
    assert short == block + 2 * 16384 * 20 * 448


@pytest.mark.parametrize("max_model_len,seqs,rows", [
    (4096, 1024, 65536), (1024, 256, 16384), (2000, 64, 16000), (100_000, 64, 65536),
    (1024, 8192, 131072)])
def test_mla_workspace_rows(max_model_len: int, seqs: int, rows: int) -> None:
    """max(min(max(8·L, 4·N·16), 65536), N·16)."""
    assert _mla_workspace_rows(max_model_len, seqs) == rows


def test_big_gpu_defaults_start_at_70_gib_and_skip_the_a100() -> None:
    a = _arch("facebook--opt-125m")

    def sizes(**kw: Any) -> tuple[int, int]:
        o = overhead_model(a, tp=1, vllm_version="0.26.0", **kw)
        return o.max_num_batched_tokens, o.max_num_seqs

    assert sizes(memory_gib=70.0) == (8192, 1024)
    assert sizes(memory_gib=69.9) == (2048, 256)
    assert sizes(memory_gib=None) == (2048, 256)
    assert sizes(memory_gib=79.25, gpu=find_gpu("A100-80GB")) == (2048, 256)
    assert sizes(memory_gib=79.18, gpu=find_gpu("H100-SXM")) == (8192, 1024)


def test_default_batched_tokens_never_exceed_seqs_times_length() -> None:
    a = _arch("facebook--opt-125m")
    o = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=80, max_num_seqs=2,
                       max_model_len=1024)
    assert (o.max_num_batched_tokens, o.max_num_seqs) == (2048, 2)
    given = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=80, max_num_seqs=1,
                           max_model_len=1024, max_num_batched_tokens=8192)
    assert (given.max_num_batched_tokens, given.max_num_seqs) == (8192, 1)
    # before 0.11 the cap did not exist, and no GPU counted as big
    old = overhead_model(a, tp=1, vllm_version="0.10.1", memory_gib=80, max_num_seqs=1,
                         max_model_len=100)
    assert (old.max_num_batched_tokens, old.max_num_seqs) == (2048, 1)


def test_seqs_never_exceed_batched_tokens() -> None:
    a = _arch("facebook--opt-125m")
    o = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=80, max_num_batched_tokens=512)
    assert (o.max_num_batched_tokens, o.max_num_seqs) == (512, 512)


def test_v2_greedy_sampler_on_a_padded_vocabulary() -> None:
    """OPT-125m's 50272 tokens pad to 50304 (a multiple of 64)."""
    a = _arch("facebook--opt-125m")
    o = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=80)
    sampler = 2 * 768 * T + 2 * 1024 * 50304
    assert o.runner == "v2" and o.parts["sampler"] == round(sampler / GIB, 4)
    assert o.activation_gib * GIB == CUBLAS_WORKSPACE + sampler  # no MoE, no top-k buffer
    assert o.parts["topk_buffer"] == 0 and o.parts["moe_workspace"] == 0
    assert o.parts["cublas"] == round(CUBLAS_WORKSPACE / GIB, 4)
    assert o.non_torch_gib == 0.24 and o.cuda_graph_gib == 0.0
    assert o.total_gib == pytest.approx(o.activation_gib + 0.24)


def test_v1_sampler_keeps_fp32_copies_and_a_topk_buffer_per_sm() -> None:
    """vLLM 0.24 profiles OPT-125m on the V1 runner: 2·H·(T + 2N) + N·(2·50304 + 12·50272),
    and an H100-PCIe's 114 SMs × V × 4 bytes of Triton top-k buffer."""
    a = _arch("facebook--opt-125m")
    o = overhead_model(a, tp=1, vllm_version="0.24", memory_gib=79.18,
                       gpu=find_gpu("H100-PCIe"))
    sampler = 2 * 768 * (T + 2048) + 1024 * (2 * 50304 + 12 * 50272)
    assert sampler == 736_493_568
    topk = 114 * 50272 * 4
    assert o.runner == "v1"
    assert o.activation_gib * GIB == CUBLAS_WORKSPACE + topk + sampler
    assert o.parts["forward"] == round(113_246_208 / GIB, 4)
    graphs = 2 * 32 * 12 * 512 * 65 * 4 / GIB + 0.136  # 12 heads × 64, sizes up to 512
    assert o.cuda_graph_gib == pytest.approx(graphs) and o.total_gib == pytest.approx(
        o.activation_gib + 0.24 + graphs)


def test_a_draft_models_forward_counts_when_it_is_larger() -> None:
    target = _arch("facebook--opt-125m")
    draft = _arch("meta-llama--llama-3.1-8b-instruct")
    o = overhead_model(target, tp=1, vllm_version="0.26.0", memory_gib=80, draft=draft,
                       speculative="draft")
    assert o.parts["forward"] == round(771_751_936 / GIB, 4)
    small = overhead_model(draft, tp=1, vllm_version="0.26.0", memory_gib=80, draft=target,
                           speculative="draft")
    assert small.parts["forward"] == o.parts["forward"]


def test_the_moe_workspace_is_part_of_the_peak() -> None:
    a = _arch("qwen--qwen3-30b-a3b")
    o = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=139.8,
                       gpu=find_gpu("H200"))
    sampler = 2 * 2048 * (T + 2048) + 1024 * 14 * 151936
    peak = CUBLAS_WORKSPACE + 512 * 2**20 + 132 * 151936 * 4 + sampler
    assert o.activation_gib * GIB == peak
    assert o.parts["moe_workspace"] == 0.5


def test_legacy_overhead_fitted_terms() -> None:
    """vLLM 0.12 (v0.11 era) on an H100: 9.7 fp32 copies of N × V; before 0.11, 2.6 copies
    and the small defaults; the forward term, 5 bytes per token per (H + 2·I/tp)."""
    a = _arch("meta-llama--llama-3.1-8b-instruct")
    v011 = overhead_model(a, tp=1, vllm_version="0.12", memory_gib=79.18)
    assert v011.runner == "legacy" and (v011.max_num_batched_tokens, v011.max_num_seqs) == (
        8192, 1024)
    assert v011.activation_gib * GIB == pytest.approx(9.7 * 1024 * 128256 * 4)
    assert v011.non_torch_gib == 0.15 and v011.cuda_graph_gib == 0.0
    old = overhead_model(a, tp=2, vllm_version="0.10.1", memory_gib=79.18)
    assert old.activation_gib * GIB == pytest.approx(2.6 * 256 * 128256 * 4)
    assert old.non_torch_gib == 0.35
    four = legacy_overhead(a, tp=4, era="v0.11", tokens=8192, seqs=1)
    assert four.non_torch_gib == 0.35
    assert four.activation_gib * GIB == pytest.approx(8192 * (4096 + 2 * 14336 / 4) * 5)


def test_legacy_moe_forward_counts_the_active_experts() -> None:
    """Qwen3-30B-A3B: 8 active experts of 768 stand in for the intermediate size."""
    a = _arch("qwen--qwen3-30b-a3b")
    o = legacy_overhead(a, tp=2, era="v0.11", tokens=8192, seqs=1)
    assert o.activation_gib * GIB == pytest.approx(8192 * (2048 + 2 * 6144 / 2) * 5)
    assert (o.max_num_batched_tokens, o.max_num_seqs, o.runner) == (8192, 1, "legacy")


def test_a_tp_that_does_not_divide_rounds_each_ranks_slice_down() -> None:
    """TP 3: vLLM gives each rank a whole number of channels and heads; so does the plan
    (14336 // 3 = 4778, 32 // 3 = 10 query and 8 // 3 = 2 KV heads, 1856 // 3 = 618 …)."""
    jamba = _arch("ai21labs--jamba-v0.1")
    assert moe_workspace(jamba, T, 3) == 2 * T * 2 * (4778 + 9556)
    llama = _arch("meta-llama--llama-3.1-8b-instruct")
    assert forward_transient(llama, T, 3) == 2 * T * (4096 + 3 * 4778)
    assert forward_transient(_no_mlp(llama), T, 3) == 2 * T * (2 * 4096 + (2 * 10 + 2 * 2) * 128)
    nemo = _arch("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16")
    assert forward_transient(nemo, T, 3) == 2 * T * (3 * 2688 + 3 * 1237) + T * 128 * 4 \
        + T * 6 * 8
    mamba = _no_mlp(nemo, moe=None)
    assert forward_transient(mamba, T, 3) == 2 * T * (2 * 2688 + 10304 // 3)
    gdn = _no_mlp(_arch("qwen--qwen3.5-9b"))
    assert forward_transient(gdn, T, 5) == 2 * T * (2 * 4096 + 12288 // 5)


def test_more_ranks_than_heads_keep_one_head_each() -> None:
    llama = _no_mlp(_arch("meta-llama--llama-3.1-8b-instruct"))
    assert forward_transient(llama, T, 64) == 2 * T * (2 * 4096 + (2 + 2) * 128)


def test_mla_on_a_small_gpu_sizes_its_workspace_by_the_context() -> None:
    """GLM-4.7-Flash on a 44 GiB GPU: 2048 tokens in 256 requests; the workspace is
    max(8·L, 4·256·16) rows: 32768 at the default L of 4096, 16384 at 2048."""
    glm = _arch("zai-org--glm-4.7-flash")
    block = 2 * 2048 * (2 * 2048 + 20 * (192 + 64) + 512 + 64 + 20 * 256)
    rest = CUBLAS_WORKSPACE + 2 * 2048 * 4 * (2048 + 3072) + 132 * 154880 * 4
    default = overhead_model(glm, tp=1, vllm_version="0.26.0", memory_gib=44.0)
    assert (default.max_num_batched_tokens, default.max_num_seqs) == (2048, 256)
    assert default.activation_gib * GIB == rest + block + 2 * 32768 * 20 * 448
    short = overhead_model(glm, tp=1, vllm_version="0.26.0", memory_gib=44.0,
                           max_model_len=2048)
    assert short.parts["forward"] == round((block + 2 * 16384 * 20 * 448) / GIB, 4)
    # an MLA drafter's forward is sized the same way
    drafted = overhead_model(_arch("facebook--opt-125m"), tp=1, vllm_version="0.24",
                             memory_gib=44.0, max_model_len=2048, draft=glm,
                             speculative="draft")
    assert drafted.parts["forward"] == round((block + 2 * 16384 * 20 * 448) / GIB, 4)
