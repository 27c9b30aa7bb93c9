"""What vLLM reserves on one GPU besides the weights and the KV cache, from its own defaults.

vLLM sizes the KV cache at start (``gpu_worker.determine_available_memory``)::

    KV budget = ceil(total × gpu_memory_utilization) − weights − activation peak
                − non-torch memory − CUDA-graph estimate

For vLLM ≥ 0.21 (the era of CUDA-graph memory profiling) each term below is what the engine's
own start-up does, read from vLLM 0.26.0's source (file and line in docs/memory.md, "The
overhead, term by term"), not a constant fitted to logs:

* ``gpu_memory_utilization``: 0.92 by default (``config/cache.py``; 0.9 before 0.21).
* The profile run: ``max_num_batched_tokens`` T tokens in ``max_num_seqs`` N requests (8192
  and 1024 on a GPU of ≥ 70 GiB but an A100, else 2048 and 256; a default T never exceeds
  ``max_num_seqs × max_model_len``), then the sampler on N rows.
  Two model runners profile differently (:func:`model_runner`): the **V2** runner (dense
  models, and DeepSeek-V2 / Qwen2-MoE / Granite-MoE) runs a greedy sampler, peak
  ``2·H·T + 2·N·V_pad`` bytes; the **V1** runner (other MoE models, hybrids, draft-model and
  n-gram speculation) samples with top-k, top-p and temperature in fp32,
  ``2·H·(T + 2N) + N·(2·V_pad + 12·V)``, or ``30·N·V`` for the rejection sampler when it
  speculates, and keeps a Triton top-k buffer of ``min(next_pow2(min(SMs, N)), SMs) × V × 4``
  (``SMs × V × 4`` from 129 requests on an H100 or H200; none below 8, sorted by PyTorch).
  Either peak is taken
  against the forward pass's largest live set ``F(T)`` (:func:`forward_transient`), plus the
  MoE kernel's workspace, kept once allocated (``2·T·top_k·(max(I, H) + max(2I, H))``), and
  cuBLAS's workspace. An EAGLE-3 or DFlash drafter adds the target's hidden states it keeps,
  ``n_aux·2·T·H``, to ``F(T)``.
* The V1 runner's CUDA-graph estimate (:func:`cuda_graph_estimate`): per mode vLLM captures
  the two largest sizes and extrapolates; what dominates it is FlashAttention's fp32 split
  buffer under FULL graphs (32 splits × heads/TP × the largest FULL size × (D_v + 1) × 4
  bytes, D_v the head size or MLA's ``kv_lora_rank``), held twice by the first FULL capture.
* Non-torch memory (the CUDA context growing as kernels load) and the CUDA-graph estimate's
  residual (the graphs' own pools and activations, which the source does not split) cannot be
  derived from the source; they are measured, and :data:`MEASURED` says where and on which run.

Earlier eras keep the model fitted to published logs (:func:`legacy_overhead`): their
sampler profiles differed and no source was read for them.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib.memory._arch import ModelArch
from benchlib.memory._gpus import GPU

__all__ = ["MEASURED", "Overhead", "cuda_graph_estimate", "default_utilization",
           "forward_transient", "model_runner", "moe_workspace", "overhead_model", "vllm_era"]

GIB = 1024**3
_VERSION_RE = re.compile(r"^\d+\.\d+")
Runner = Literal["v1", "v2", "legacy"]


def _version(v: str) -> tuple[int, int]:
    m = _VERSION_RE.match(v.lstrip("v"))
    if not m:
        return (0, 32)
    major, minor = m.group(0).split(".")
    return int(major), int(minor)


def vllm_era(version: str) -> Literal["legacy", "v0.11", "current"]:
    """``current`` from 0.21 (CUDA-graph memory profiling), ``v0.11`` from 0.11."""
    v = _version(version)
    return "legacy" if v < (0, 11) else "v0.11" if v < (0, 21) else "current"


def default_utilization(version: str) -> float:
    """vLLM's ``--gpu-memory-utilization`` default: 0.92 in 0.26.0 and 0.32.0
    (``config/cache.py``), raised with CUDA-graph profiling (0.21) to keep the KV size;
    0.9 before."""
    return 0.92 if vllm_era(version) == "current" else 0.9


#: the two terms no source gives, measured: per GPU kind, and where each figure was read.
#: Only runs in the plan's *fit* set may change them (tests/data/h200_memory/shapes.json);
#: the held-apart runs test them.
MEASURED: dict[str, dict[str, float | str]] = {
    "non_torch_gib": {"value": 0.24, "source": "vLLM 0.26.0 'Actual usage' line, H200, "
                      "Qwen3-30B-A3B dummy weights (tests/data/h200_memory)"},
    "cuda_graph_residual_gib": {"value": 0.136, "source": "vLLM 0.26.0 'Estimated CUDA graph "
                                "memory' 0.64 GiB less the split buffer's 0.504 GiB, H200, "
                                "Qwen3-30B-A3B (tests/data/h200_memory)"},
}
#: FlashAttention's split count under FULL CUDA graphs (0.26.0 ``config/attention.py``:
#: ``flash_attn_max_num_splits_for_cuda_graph``) and vLLM's largest default capture size
#: (``config/vllm.py`` ``_set_cudagraph_sizes``)
GRAPH_SPLITS, MAX_CAPTURE_SIZE = 32, 512
#: torch's cuBLAS workspace on Hopper and later (its documented default, 32 MiB per stream)
CUBLAS_WORKSPACE = 32 * 2**20
#: model types the V2 runner takes although they are MoE (0.26.0 config/vllm.py:68-77)
_V2_MOE_TYPES = frozenset({"deepseek_v2", "qwen2_moe", "granitemoe"})
#: speculative methods the V2 runner does not run (0.26.0 config/vllm.py:2127-2165)
_V1_SPEC = frozenset({"draft", "ngram", "suffix"})


class Overhead(BaseModel):
    """Per-GPU memory vLLM reserves besides weights and KV, term by term."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    activation_gib: float = Field(description="the profile run's peak (vLLM's 'peak "
                                  "activation')")
    non_torch_gib: float = Field(description="CUDA context growth (vLLM's 'non-torch memory')")
    cuda_graph_gib: float = Field(description="the CUDA-graph estimate vLLM takes off the KV "
                                  "budget (0 on the V2 runner)")
    max_num_batched_tokens: int
    max_num_seqs: int
    runner: Runner = "legacy"
    parts: dict[str, float] = Field(
        default_factory=dict, description="the activation peak's parts, GiB: forward, "
        "sampler, moe_workspace, topk_buffer, cublas")

    @property
    def total_gib(self) -> float:
        return self.activation_gib + self.non_torch_gib + self.cuda_graph_gib


def _hybrid(a: ModelArch) -> bool:
    return a.linear is not None or a.mamba is not None


def model_runner(a: ModelArch, version: str, speculative: str | None = None) -> Runner:
    """Which model runner vLLM profiles with (0.26.0's rule, ``config/vllm.py:550-622``):
    V2 for dense models and a few MoE types, V1 for other MoE models, hybrids and the
    speculative methods V2 lacks; V1 for every model before 0.26; ``legacy`` before 0.21."""
    if vllm_era(version) != "current":
        return "legacy"
    if _version(version) < (0, 26):
        return "v1"
    if speculative in _V1_SPEC or _hybrid(a):
        return "v1"
    if a.moe is not None and a.model_type not in _V2_MOE_TYPES:
        return "v1"
    return "v2"


def moe_workspace(a: ModelArch, tokens: int, tp: int) -> int:
    """The MoE kernel's workspace (Triton experts, no chunking in 0.26), allocated for
    ``tokens`` and kept: ``2·T·top_k·(max(I, H) + max(2I, H))`` bytes."""
    if a.moe is None:
        return 0
    inter = a.moe.expert_intermediate_size // tp
    h = a.hidden_size
    return 2 * tokens * a.moe.top_k * (max(inter, h) + max(2 * inter, h))


def _mla_workspace_rows(max_model_len: int, seqs: int, block: int = 16) -> int:
    """MLA's chunked-prefill workspace rows (``determine_chunked_prefill_workspace_size``)."""
    return max(min(max(8 * max_model_len, 4 * seqs * block), 65536), seqs * block)


def forward_transient(a: ModelArch, tokens: int, tp: int, *, max_model_len: int = 4096,
                      seqs: int = 1024) -> int:
    """The forward pass's largest live set over ``tokens`` (bf16, attention skipped as in
    the profile): the largest of the attention block's, the MLP's or MoE layer's and a
    recurrent layer's projections, each beside the residual stream."""
    t, h = tokens, a.hidden_size
    dense_i = a.intermediate_size // tp
    mlp = 2 * t * (h + (3 if a.gated_mlp else 2) * dense_i) if dense_i else 0
    moe = 0
    if a.moe is not None:
        m = a.moe
        shared = m.num_shared_experts * m.shared_intermediate_size // tp
        moe = 2 * t * (3 * h + 3 * shared) + t * m.num_experts * 4 + t * m.top_k * 8
    heads = max(1, a.num_heads // tp)
    kv = max(1, a.num_kv_heads // tp)
    attn = 2 * t * (2 * h + (2 * heads + 2 * kv) * a.head_dim)
    if a.mla is not None:
        ml = a.mla
        rows = _mla_workspace_rows(max_model_len, seqs)
        attn = 2 * t * (2 * h + heads * (ml.qk_nope_head_dim + ml.qk_rope_head_dim)
                        + ml.kv_lora_rank + ml.qk_rope_head_dim + heads * ml.v_head_dim)
        attn += 2 * rows * heads * (ml.qk_nope_head_dim + ml.v_head_dim)
    rec = 0
    if a.mamba is not None:
        mb = a.mamba
        proj = 2 * mb.d_inner + 2 * mb.n_groups * mb.d_state + mb.n_heads
        rec = 2 * t * (2 * h + proj // tp)
    if a.linear is not None:
        ln = a.linear
        proj = 2 * ln.num_k_heads * ln.head_k_dim + 2 * ln.num_v_heads * ln.head_v_dim
        rec = 2 * t * (2 * h + proj // tp)
    return max(mlp, moe, attn, rec)


def _padded_vocab(v: int) -> int:
    return 64 * math.ceil(v / 64)


def overhead_model(a: ModelArch, *, tp: int, vllm_version: str, memory_gib: float | None,
                   gpu: GPU | None = None, max_num_batched_tokens: int | None = None,
                   max_num_seqs: int | None = None, max_model_len: int = 4096,
                   speculative: str | None = None,
                   draft: ModelArch | None = None, cuda_graphs: bool = True,
                   num_speculative_tokens: int | None = None,
                   aux_hidden_states: int = 0) -> Overhead:
    """Activation peak, non-torch memory and CUDA-graph estimate for one GPU, vLLM's way
    (the module's docstring); ``speculative``: the recipe's method (``draft``, ``ngram``, …),
    ``draft``: the draft model's architecture (its forward runs in the profile too);
    ``cuda_graphs``: False under ``--enforce-eager`` (nothing captured, no estimate taken);
    ``aux_hidden_states``: the target's hidden states an EAGLE-3 / DFlash drafter keeps
    (:func:`benchlib.memory._draft.aux_hidden_states`), each ``[T, H]`` in bf16 beside the
    target's largest live set."""
    era = vllm_era(vllm_version)
    big = era != "legacy" and _big_gpu(memory_gib, gpu)
    seqs = max_num_seqs or (1024 if big else 256)
    tokens = max_num_batched_tokens or (8192 if big else 2048)
    if max_num_batched_tokens is None and era != "legacy":
        # arg_utils.py: a default never exceeds max_num_seqs × max_model_len
        tokens = min(tokens, seqs * max_model_len)
    seqs = min(seqs, tokens)
    runner = model_runner(a, vllm_version, speculative)
    if runner == "legacy":
        return legacy_overhead(a, tp=tp, era=era, tokens=tokens, seqs=seqs)
    h, v, vpad = a.hidden_size, a.vocab_size, _padded_vocab(a.vocab_size)
    forward = forward_transient(a, tokens, tp, max_model_len=max_model_len, seqs=seqs)
    forward += aux_hidden_states * 2 * tokens * h
    if draft is not None:
        forward = max(forward, forward_transient(draft, tokens, tp,
                                                 max_model_len=max_model_len, seqs=seqs))
    workspace = moe_workspace(a, tokens, tp)
    if runner == "v2":
        sampler, topk = 2 * h * tokens + 2 * seqs * vpad, 0
    else:
        fp32 = 30 * seqs * v if speculative else seqs * (2 * vpad + 12 * v)
        sampler = 2 * h * (tokens + 2 * seqs) + fp32
        # topk_topp_sampler.py: below 8 rows a PyTorch sort, no buffer; topk_topp_triton.py:
        # one fp32 row of V per Triton program, min(SMs, N) programs, the buffer rounded up
        # to a power of two and capped at the SMs
        sms = gpu.sm_count if gpu and gpu.sm_count else 132
        rows = 0 if seqs < 8 else min(1 << (min(sms, seqs) - 1).bit_length(), sms)
        topk = rows * v * 4
    peak = CUBLAS_WORKSPACE + workspace + topk + max(forward, sampler)
    parts = {"forward": forward / GIB, "sampler": sampler / GIB,
             "moe_workspace": workspace / GIB, "topk_buffer": topk / GIB,
             "cublas": CUBLAS_WORKSPACE / GIB}
    graphs = (cuda_graph_estimate(a, tp=tp, seqs=seqs, tokens=tokens,
                                  k=num_speculative_tokens or 0)
              if runner == "v1" and cuda_graphs else 0.0)
    return Overhead(activation_gib=peak / GIB,
                    non_torch_gib=float(MEASURED["non_torch_gib"]["value"]),
                    cuda_graph_gib=graphs, max_num_batched_tokens=tokens, max_num_seqs=seqs,
                    runner=runner, parts={k: round(x, 4) for k, x in parts.items()})


def cuda_graph_estimate(a: ModelArch, *, tp: int, seqs: int, tokens: int, k: int = 0) -> float:
    """The V1 runner's CUDA-graph estimate, GiB (0.26.0 ``profile_cudagraph_memory``): twice
    FlashAttention's split buffer at the largest FULL (uniform decode) size, plus the measured
    residual. Sizes come in steps of ``1 + k`` with ``k`` speculative tokens; the largest is
    ``min(2·seqs·(1 + k), 512, tokens)``, and FULL sizes stop at ``seqs·(1 + k)``, so the
    largest FULL size is ``min(seqs·(1 + k), 512, tokens)`` in whole steps."""
    q = 1 + k
    largest_full = min(seqs * q, MAX_CAPTURE_SIZE, tokens) // q * q
    d_v = a.mla.kv_lora_rank if a.mla is not None else a.head_dim
    split = GRAPH_SPLITS * max(1, a.num_heads // tp) * largest_full * (d_v + 1) * 4
    return 2 * split / GIB + float(MEASURED["cuda_graph_residual_gib"]["value"])


def _big_gpu(memory_gib: float | None, gpu: GPU | None) -> bool:
    """vLLM's serve defaults: 8192 batched tokens / 1024 seqs on ≥70 GiB GPUs but A100s."""
    if gpu is not None and gpu.name.startswith("A100"):
        return False
    return memory_gib is not None and memory_gib >= 70


# Before 0.21 — fitted to the published logs in tests/data/vllm_logs (the benchmark prints
# the errors): the larger of the forward pass and the sampler's fp32 copies of N × V.
#: bytes per scheduled token per unit of (hidden + 2 × intermediate / tp)
_FORWARD_BYTES = 5.0
#: fp32 [max_num_seqs × vocab] copies the sampler's profiling run keeps alive, by vLLM era
_SAMPLER_COPIES = {"legacy": 2.6, "v0.11": 9.7}
#: CUDA context, NCCL and custom all-reduce buffers outside torch's allocator
_NON_TORCH_GIB = {1: 0.15, 2: 0.35}


def legacy_overhead(a: ModelArch, *, tp: int, era: str, tokens: int, seqs: int) -> Overhead:
    """The overhead of vLLM before 0.21 (fitted to published logs; no CUDA-graph estimate)."""
    inter = a.intermediate_size
    if a.moe is not None:
        inter = a.moe.expert_intermediate_size * a.moe.top_k
    forward = tokens * (a.hidden_size + 2 * inter / tp) * _FORWARD_BYTES
    sampler = _SAMPLER_COPIES[era] * seqs * a.vocab_size * 4
    return Overhead(activation_gib=max(forward, sampler) / GIB,
                    non_torch_gib=_NON_TORCH_GIB[min(tp, 2)], cuda_graph_gib=0.0,
                    max_num_batched_tokens=tokens, max_num_seqs=seqs, runner="legacy")
