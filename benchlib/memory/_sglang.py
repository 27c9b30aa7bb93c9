"""What SGLang reports about its memory pool: ``max_total_num_tokens`` and "K size / V size".

SGLang sizes its KV pool once, right after loading the weights (sources in ``sgl-project/sglang``,
``python/sglang/srt/``)::

    rest      = free_after_weights − free_before_weights × (1 − mem_fraction_static)
    tokens    = rest × 2**30 // cell_size            (page-aligned down to page_size)

* ``model_executor/model_runner.py`` (``profile_max_num_token``; since late 2025
  ``model_runner_kv_cache_mixin.py``, ``_profile_available_bytes``): both free-memory figures
  are measured with ``torch.cuda.mem_get_info`` (the minimum over ranks under TP); the log
  prints them as "Load weight begin. avail mem=X GB" and "Load weight end. … avail mem=Y GB,
  mem usage=W GB" (W = X − Y, the weights). So ``mem_fraction_static`` is the share of the free
  memory at start that weights *plus* KV may take; the rest is left for activations and CUDA
  graphs.
* cell size (bytes per token, one GPU): ``max(1, kv_heads // tp) × head_dim × layers × 2 ×
  dtype`` for MHA/GQA; ``(kv_lora_rank + qk_rope_head_dim) × layers × dtype`` for MLA — one
  latent, no separate V, replicated on every TP rank (``MLATokenToKVPool``). ``fp8_e4m3`` /
  ``fp8_e5m2`` KV stores one byte per element. These are the per-layer sizes
  :func:`benchlib.memory.kv_layout` computes for vLLM (the DeepSeek-V3.2 indexer aside).
* ``mem_cache/memory_pool.py``: the pool holds ``tokens + page_size`` slots (one padding page)
  and logs "KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB" (MLA: "KV size"),
  GB meaning GiB there; the scheduler then prints "max_total_num_tokens=N, …,
  available_gpu_mem=Z GB".
* ``server_args.py`` (``_handle_gpu_memory_settings``, PR #10975): when ``--mem-fraction-static``
  is not given it is ``round((gpu_mib − reserved_mib) / gpu_mib, 3)`` with ``reserved = 512 +
  1.5 × max(chunked_prefill_size, 2048) + 2 × cuda_graph_max_bs + 1024 × tp × pp / 8`` MiB
  (the chunk and graph batch by the GPU's memory and TP), at least 10 GiB on GPUs over 60 GiB,
  then 2 GiB for an EAGLE-type draft or 6 GiB for a draft model
  (:func:`sglang_mem_fraction_default`).

Not modelled: SGLang's hybrid pools (SWA, Mamba/linear attention), the NSA indexer cache,
speculative-decoding draft pools and ``--max-total-tokens`` caps; :func:`sglang_pool` says so in
its notes. Before launch the free memory at start is estimated as total memory minus a CUDA
context (:data:`SGLANG_CONTEXT_GIB`); a published log gives it exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchlib._exceptions import UsageError
from benchlib.memory._arch import ModelArch
from benchlib.memory._kv import kv_layout

__all__ = [
    "SGLANG_CONTEXT_GIB",
    "SGLANG_LOG_PATTERNS",
    "SGLangPool",
    "parse_sglang_log",
    "sglang_cell_bytes",
    "sglang_mem_fraction_default",
    "sglang_pool",
    "sglang_reserved_mib",
]

GIB = 1024**3
#: free memory the CUDA context, NCCL and custom all-reduce take before weights load, per GPU
#: (fitted to the SGLang logs in tests/data/sglang_logs: 0.6 GiB alone, ~0.9 GiB under TP)
SGLANG_CONTEXT_GIB = {1: 0.6, 2: 0.9}

SGLANG_LOG_PATTERNS: Mapping[str, re.Pattern[str]] = MappingProxyType({
    "free_before_weights_gib": re.compile(r"Load weight begin\. avail mem=([\d.]+) GB"),
    "weights_end": re.compile(
        r"Load weight end\..*?avail mem=([\d.]+) GB(?:, mem usage=([\d.]+) GB)?"),
    "kv_pool": re.compile(r"KV Cache is allocated\..*?#tokens: ([\d,]+), "
                          r"(?:K size: ([\d.]+) GB, V size: ([\d.]+) GB|KV size: ([\d.]+) GB)"),
    "max_total_num_tokens": re.compile(r"max_total_num_tokens=(\d+)"),
    "available_gpu_mem_gib": re.compile(r"available_gpu_mem=([\d.]+) GB"),
    "mem_fraction_static": re.compile(r"mem_fraction_static=([\d.]+)"),
})


class SGLangPool(BaseModel):
    """SGLang's token pool on one GPU, as its startup log will report it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mem_fraction_static: float = Field(description="--mem-fraction-static used")
    mem_fraction_source: str = Field(description="'given', or 'default' (SGLang's heuristic)")
    cell_bytes: int = Field(description="KV bytes per token on one GPU, all layers")
    free_before_weights_gib: float = Field(description="free memory when loading starts")
    free_after_weights_gib: float = Field(description="free memory once the weights are in")
    free_source: str = Field(description="'log' (measured by SGLang) or 'estimated'")
    rest_gib: float = Field(description="memory the pool is sized from (may be negative)")
    page_size: int = Field(description="tokens per page; the pool is page-aligned")
    max_total_num_tokens: int = Field(description="SGLang's max_total_num_tokens")
    k_size_gib: float = Field(description="'K size' (MLA: the whole 'KV size')")
    v_size_gib: float = Field(description="'V size' (0 for MLA)")
    notes: list[str] = Field(default_factory=list, description="what the model leaves out")


def sglang_cell_bytes(a: ModelArch, *, tp: int = 1, kv_cache_dtype: str = "auto"
                      ) -> tuple[int, list[str]]:
    """Bytes per token per GPU of SGLang's pool, and notes on what SGLang does differently."""
    notes: list[str] = []
    if a.linear is not None:
        raise UsageError("--engine sglang", f"{a.name}: SGLang sizes hybrid linear-attention "
                         "models with a separate Mamba pool, which this model does not cover")
    layout = kv_layout(a, tp=tp, kv_cache_dtype=kv_cache_dtype)
    if a.mla is not None and a.mla.index_head_dim:
        m = a.mla
        per_layer = int((m.kv_lora_rank + m.qk_rope_head_dim) * layout.dtype_bytes)
        notes.append("the NSA indexer's key cache is not counted (SGLang keeps it in its own pool)")
        return per_layer * a.count("mla"), notes
    if a.sliding_window and a.count("sliding"):
        notes.append("sliding-window layers counted as full attention (SGLang's hybrid SWA pool "
                     "is not modelled)")
    return sum(x.bytes_per_token for x in layout.layers), notes


#: SGLang's defaults by GPU memory (MiB below which each row holds): chunked prefill size,
#: CUDA-graph max batch below TP 4, and at TP 4 or more (``server_args.py``, 0.5.8–0.5.9)
_SGLANG_TIERS = ((20 * 1024, 2048, 8, 8), (35 * 1024, 2048, 24, 80),
                 (60 * 1024, 4096, 32, 160), (160 * 1024, 8192, 256, 512))
_SGLANG_TOP = (16384, 512, 512)
#: SGLang's speculative reserve, added after the 10 GiB floor: a draft model (its
#: STANDALONE) 6 GiB, EAGLE-type drafts (EAGLE, EAGLE3, NEXTN/MTP) 2 GiB, n-gram none
_SGLANG_SPEC_MIB = {"draft": 6 * 1024, "standalone": 6 * 1024, "ngram": 0}


def sglang_reserved_mib(gpu_memory_gib: float, *, tp: int = 1, pp: int = 1,
                        chunked_prefill_size: int | None = None,
                        max_prefill_tokens: int = 16384,
                        cuda_graph_max_bs: int | None = None,
                        dp_attention_size: int | None = None,
                        speculative: str | None = None) -> float:
    """The MiB SGLang keeps out of its static memory when ``--mem-fraction-static`` is not given
    (``server_args.py``'s ``_handle_gpu_memory_settings``, read in 0.5.8–0.5.9): the chunk and
    graph batch by the GPU's memory (and TP), ``512 + 1.5 × max(chunk, 2048) + 2 × graph batch
    + 1024 × tp × pp / 8``, dp attention's graph buffers, at least 10 GiB above 60 GiB, then the
    speculative draft's reserve. ``chunked_prefill_size`` ≤ 0 (chunking off) reserves for
    ``max_prefill_tokens`` instead; ``speculative``: the method (draft, ngram, eagle, mtp …)."""
    gpu_mib = gpu_memory_gib * 1024
    chunk_default, bs_small, bs_large = next(
        (row[1:] for row in _SGLANG_TIERS if gpu_mib < row[0]), _SGLANG_TOP)
    chunk = chunked_prefill_size if chunked_prefill_size is not None else chunk_default
    graph_bs = cuda_graph_max_bs or (bs_small if tp < 4 else bs_large)
    reserved = 512 + 1.5 * max(chunk if chunk > 0 else max_prefill_tokens, 2048)
    reserved += 2 * graph_bs + 1024 * tp * pp / 8
    if dp_attention_size:
        reserved += graph_bs * dp_attention_size * (3 + 1.5 * (graph_bs > 300))
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if speculative:
        reserved += _SGLANG_SPEC_MIB.get(speculative.lower(), 2 * 1024)
    return reserved


def sglang_mem_fraction_default(gpu_memory_gib: float, **settings: Any) -> float:
    """``--mem-fraction-static`` SGLang picks when none is given: what it does not reserve
    (:func:`sglang_reserved_mib`, which takes the same ``settings``), to three decimals."""
    gpu_mib = gpu_memory_gib * 1024
    return round((gpu_mib - sglang_reserved_mib(gpu_memory_gib, **settings)) / gpu_mib, 3)


def sglang_pool(a: ModelArch, *, weights_gib: float, tp: int = 1, kv_cache_dtype: str = "auto",
                mem_fraction_static: float | None = None, gpu_memory_gib: float | None = None,
                free_before_weights_gib: float | None = None,
                free_after_weights_gib: float | None = None, page_size: int = 1,
                speculative: str | None = None) -> SGLangPool | None:
    """SGLang's pool for ``a`` on one GPU of a ``tp`` group.

    Free memory before/after the weights comes from a log when given (the exact figures SGLang
    sized the pool from), else from ``gpu_memory_gib`` minus a CUDA context minus
    ``weights_gib``. ``None`` when neither is known.
    """
    cell, notes = sglang_cell_bytes(a, tp=tp, kv_cache_dtype=kv_cache_dtype)
    if free_before_weights_gib is not None:
        before, source = free_before_weights_gib, "log"
        after = (free_after_weights_gib if free_after_weights_gib is not None
                 else before - weights_gib)
    elif gpu_memory_gib is not None:
        before = gpu_memory_gib - SGLANG_CONTEXT_GIB[min(tp, 2)]
        after, source = before - weights_gib, "estimated"
    else:
        return None
    if mem_fraction_static is None:
        if gpu_memory_gib is None:
            raise UsageError("--mem-fraction-static", "give it, or --gpu / --gpu-memory-gib "
                             "for SGLang's default")
        mfs, mfs_source = sglang_mem_fraction_default(gpu_memory_gib, tp=tp,
                                                      speculative=speculative), "default"
    else:
        mfs, mfs_source = mem_fraction_static, "given"
    rest = after - before * (1 - mfs)
    tokens = max(0, int(rest * GIB // cell)) // page_size * page_size if cell else 0
    slots = tokens + page_size
    if a.mla is not None:
        k, v = slots * cell / GIB, 0.0
    else:
        k = v = slots * cell / 2 / GIB
    return SGLangPool(
        mem_fraction_static=mfs, mem_fraction_source=mfs_source, cell_bytes=cell,
        free_before_weights_gib=before, free_after_weights_gib=after, free_source=source,
        rest_gib=rest, page_size=page_size, max_total_num_tokens=tokens, k_size_gib=k,
        v_size_gib=v, notes=notes)


def parse_sglang_log(lines: Iterable[str]) -> dict[str, float | int]:
    """SGLang's memory lines (first match wins: TP ranks repeat them), under
    ``free_before_weights_gib``, ``free_after_weights_gib``, ``weights_gib``, ``kv_pool_tokens``,
    ``k_size_gib``, ``v_size_gib`` (MLA: ``kv_size_gib``), ``max_total_num_tokens``,
    ``available_gpu_mem_gib``, ``mem_fraction_static``."""
    found: dict[str, float | int] = {}
    for line in lines:
        for key, pattern in SGLANG_LOG_PATTERNS.items():
            m = pattern.search(line)
            if m is None:
                continue
            if key == "weights_end":
                found.setdefault("free_after_weights_gib", float(m.group(1)))
                if m.group(2) is not None:
                    found.setdefault("weights_gib", float(m.group(2)))
            elif key == "kv_pool":
                found.setdefault("kv_pool_tokens", int(m.group(1).replace(",", "")))
                if m.group(2) is not None:
                    found.setdefault("k_size_gib", float(m.group(2)))
                    found.setdefault("v_size_gib", float(m.group(3)))
                else:
                    found.setdefault("kv_size_gib", float(m.group(4)))
            elif key == "max_total_num_tokens":
                found.setdefault(key, int(m.group(1)))
            else:
                found.setdefault(key, float(m.group(1)))
    if "free_before_weights_gib" not in found and {"free_after_weights_gib",
                                                   "weights_gib"} <= found.keys():
        # "mem usage" is free-before minus free-after, so the begin line is implied
        found["free_before_weights_gib"] = round(
            float(found["free_after_weights_gib"]) + float(found["weights_gib"]), 2)
    return found
