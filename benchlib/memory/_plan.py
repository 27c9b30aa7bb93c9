"""The plan: weights, KV budget, KV tokens, concurrency, decode floor and a verdict, per GPU.

Budget, as vLLM computes it (``gpu_worker.determine_available_memory``)::

    KV budget = total × gpu_memory_utilization − weights − activation peak − non-torch
                (− the CUDA-graph pool estimate, which vLLM subtracts since 0.21)

The weights are exact enough (a few tenths of a percent against vLLM's "Model loading took"
lines); the activation peak is a model fitted to published logs (see
``benchmarks/memory_vs_vllm_logs.py`` for its error). When the engine has already printed
"Available KV cache memory", pass it as ``kv_budget_gib`` and the token count is exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from benchlib._exceptions import UsageError
from benchlib.memory._arch import ModelArch
from benchlib.memory._decode import DecodeFloor, decode_floor
from benchlib.memory._draft import aux_hidden_states, plan_draft
from benchlib.memory._gpus import GPU, find_gpu
from benchlib.memory._kv import (
    KVCapacity,
    KVLayout,
    kv_capacity,
    kv_layout,
    legacy_token_report,
)
from benchlib.memory._load import load_model_config
from benchlib.memory._overhead import Overhead, overhead_model
from benchlib.memory._params import ParamBreakdown, count_params
from benchlib.memory._plan_config import PlanConfig
from benchlib.memory._quant import check_quantization, checkpoint_kv_dtype
from benchlib.memory._sglang import SGLangPool, sglang_pool
from benchlib.memory._weights import WeightPlan, weight_plan

__all__ = ["Plan", "PlanConfig", "plan", "sweep_max_model_len"]  # PlanConfig re-exported

GIB = 1024**3
class Plan(BaseModel):
    """Everything the plan computed; :meth:`summary` is the CLI's JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    config: PlanConfig
    arch: ModelArch
    gpu: GPU | None
    tp: int
    num_gpus: int
    memory_gib: float | None
    bandwidth_gbs: float | None
    max_model_len: int
    params: ParamBreakdown
    weights: WeightPlan
    layout: KVLayout
    overhead: Overhead
    usable_gib: float | None
    kv_budget_gib: float | None
    kv_budget_source: Literal["predicted", "given"] | None
    capacity: KVCapacity | None
    token_report: Literal["blocks", "concurrency"]
    decode: list[DecodeFloor]
    fits: bool
    verdict: str
    warnings: list[str]
    sglang: SGLangPool | None = None

    @property
    def kv_cache_tokens(self) -> int | None:
        """What this vLLM version prints as "GPU KV cache size: N tokens"."""
        if self.capacity is None:
            return None
        c = self.capacity
        return c.kv_cache_tokens_legacy if self.token_report == "blocks" else c.kv_cache_tokens

    def summary(self) -> dict[str, Any]:
        """The JSON ``benchlib plan --json`` prints (per-GPU figures unless named total)."""
        d1 = self.decode[0] if self.decode else None
        dB = self.decode[-1] if self.decode else None
        cap = self.capacity
        return {
            "model": self.arch.name, "model_type": self.arch.model_type,
            "gpu": self.gpu.name if self.gpu else None, "gpu_memory_gib": self.memory_gib,
            "num_gpus": self.num_gpus, "tp": self.tp,
            "gpu_memory_utilization": self.config.utilization,
            "max_model_len": self.max_model_len,
            "total_params": self.params.total, "active_params": self.params.active,
            "params_source": self.params.source,
            "weights_scheme": self.weights.scheme,
            "weights_high_precision": self.weights.high_precision,
            "weights_gib_total": round(self.weights.total_gib, 3),
            "weights_gib_per_gpu": round(self.weights.per_gpu_gib, 3),
            "kv_cache_dtype": self.layout.kv_dtype,
            "kv_bytes_per_token": self.layout.bytes_per_token,
            "kv_sliding_bytes_per_token": self.layout.sliding_bytes_per_token,
            "kv_state_bytes_per_request": self.layout.state_bytes_per_request,
            "block_size": self.layout.block_size,
            "overhead_gib_per_gpu": round(self.overhead.total_gib, 3),
            "usable_gib_per_gpu": round(self.usable_gib, 3) if self.usable_gib else None,
            "kv_budget_gib_per_gpu": round(self.kv_budget_gib, 3)
            if self.kv_budget_gib is not None else None,
            "kv_budget_source": self.kv_budget_source,
            "kv_blocks": cap.num_blocks if cap else None,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": round(cap.max_concurrency, 3) if cap else None,
            "max_concurrency_all_replicas": round(
                cap.max_concurrency * (self.num_gpus // self.tp), 3) if cap else None,
            "decode_context_tokens": d1.context_tokens if d1 else None,
            "decode_floor_ms": round(d1.tpot_ms, 3) if d1 else None,
            "decode_tokens_per_s_ceiling": round(d1.tokens_per_s, 1) if d1 else None,
            "decode_batch": dB.batch if dB else None,
            "decode_floor_ms_at_batch": round(dB.tpot_ms, 3) if dB else None,
            "decode_tokens_per_s_ceiling_at_batch": round(dB.tokens_per_s, 1) if dB else None,
            "fits": self.fits, "verdict": self.verdict, "warnings": self.warnings,
            "notes": self.weights.notes + self.layout.notes,
        } | ({} if not self.config.sglang_pool else {
            "sglang_mem_fraction_static": self.sglang.mem_fraction_static if self.sglang else None,
            "sglang_max_total_num_tokens": self.sglang.max_total_num_tokens
            if self.sglang else None})


def _resolve_gpu(cfg: PlanConfig) -> tuple[GPU | None, float | None, float | None]:
    gpu = find_gpu(cfg.gpu) if cfg.gpu else None
    memory = gpu.memory_gib if gpu else cfg.gpu_memory_gib
    bandwidth = cfg.gpu_bandwidth_gbs or (gpu.bandwidth_gbs if gpu else None)
    return gpu, memory, bandwidth


def _check_tp(a: ModelArch, tp: int, warnings: list[str]) -> None:
    if a.num_heads % tp:
        warnings.append(f"tp {tp} does not divide {a.num_heads} attention heads: vLLM refuses it")
    if a.mla is None and a.num_kv_heads % tp and tp % a.num_kv_heads:
        warnings.append(f"tp {tp} and {a.num_kv_heads} KV heads do not divide either way: "
                        "vLLM refuses it")


def _with_mtp(weights: WeightPlan, params: ParamBreakdown, tp: int) -> WeightPlan:
    """The weights with the checkpoint's MTP layers, which vLLM loads beside the model when it
    serves ``--speculative-config method mtp`` (at the model's mean bytes per parameter)."""
    extra = int(params.mtp * weights.total_bytes / max(1, params.total))
    return weights.model_copy(update={
        "total_bytes": weights.total_bytes + extra,
        "per_gpu_bytes": weights.per_gpu_bytes + extra // tp,
        "notes": [*weights.notes, f"{params.mtp / 1e9:.2f} B MTP parameters load for "
                  "--speculative-config method mtp"]})


def plan(cfg: PlanConfig, arch: ModelArch | None = None) -> Plan:
    """Compute the plan for ``cfg`` (``arch`` skips reading the config file again)."""
    a = arch or load_model_config(cfg.model)
    load_notes: list[str] = []
    if cfg.language_model_only and a.tower_params:  # interfaces.py _mark_tower_model
        load_notes.append(f"--language-model-only: the {a.tower_params / 1e9:.2f} B-parameter "
                          "vision/audio towers are not built")
        a = a.model_copy(update={"tower_params": 0})
    weight_dtype = cfg.weight_dtype
    if weight_dtype == "auto":
        weight_dtype = check_quantization(a.quantization, cfg.quantization) or "auto"
    kv_dtype = cfg.kv_cache_dtype
    if kv_dtype == "auto" and (ckpt_kv := checkpoint_kv_dtype(a.quantization)):
        kv_dtype = ckpt_kv
        load_notes.append(f"KV cache {ckpt_kv}: the checkpoint's KV quantization, which "
                          "vLLM's --kv-cache-dtype auto follows")
    tp = cfg.tp or cfg.num_gpus or 1
    num_gpus = cfg.num_gpus or tp
    gpu, memory, bandwidth = _resolve_gpu(cfg)
    max_len = cfg.max_model_len or a.max_position_embeddings
    if not max_len:
        raise UsageError("--max-model-len", "the config has no max_position_embeddings; "
                         "give --max-model-len")
    warnings: list[str] = []
    _check_tp(a, tp, warnings)
    params = count_params(a)
    weights = weight_plan(a, tp=tp, weight_dtype=weight_dtype, params=params)
    weights = weights.model_copy(update={"notes": [*load_notes, *weights.notes]})
    serve_mtp = cfg.speculative == "mtp" and a.mtp_layers > 0
    spec_k = (cfg.num_speculative_tokens or 0) if cfg.speculative else 0
    layout = kv_layout(a, tp=tp, kv_cache_dtype=kv_dtype, block_size=cfg.block_size,
                       mtp=serve_mtp, num_speculative_tokens=spec_k)
    if serve_mtp:
        weights = _with_mtp(weights, params, tp)
    draft = load_model_config(cfg.draft_model) if cfg.draft_model is not None else None
    if draft is not None and cfg.draft_model is not None:
        weights, layout = plan_draft(weights, layout, target=a, draft=draft,
                                     folder=cfg.draft_model, method=cfg.speculative, tp=tp,
                                     weight_dtype=weight_dtype, kv_cache_dtype=kv_dtype,
                                     block_size=cfg.block_size)
    aux = (aux_hidden_states(cfg.draft_model, cfg.speculative, a.num_layers)
           if cfg.draft_model is not None else 0)
    overhead = overhead_model(a, tp=tp, vllm_version=cfg.vllm_version, memory_gib=memory,
                              gpu=gpu, max_num_batched_tokens=cfg.max_num_batched_tokens,
                              max_num_seqs=cfg.max_num_seqs, max_model_len=max_len,
                              speculative=cfg.speculative, draft=draft,
                              cuda_graphs=cfg.cuda_graphs,
                              num_speculative_tokens=cfg.num_speculative_tokens,
                              aux_hidden_states=aux)
    if "block" in weights.scheme and "fp8" in weights.scheme:
        warnings.append("ready in: FP8 block-quantized weights make vLLM 0.26.0 warm up DeepGEMM "
                        "kernels after sizing the KV cache (Qwen3-32B-FP8 on an H200: more "
                        "than 3 minutes, 1,155 kernels); give the recipe's ready_timeout_s "
                        "600 s or more")
    if a.linear is not None and overhead.runner == "v1":
        warnings.append(f"activation peak: the plan's {overhead.activation_gib:.2f} GiB is what "
                        "vLLM 0.26.0's source accounts for (its profile skips the "
                        "Gated-DeltaNet kernels); on this family's cold starts vLLM logged "
                        "about 2.0 GiB more (Qwen3.5-27B: 2.50 GiB on an H100, 2.73 with "
                        "DFlash on an H100 and an H200), most likely its first torch.compile "
                        "inside the profiling window: the predicted KV budget may be that "
                        "much high; pass the engine's as --kv-budget-gib")
    # vLLM requests ceil(total × utilization) bytes (v1/worker/utils.py request_memory)
    usable = math.ceil(memory * GIB * cfg.utilization) / GIB if memory else None
    budget: float | None
    source: Literal["predicted", "given"] | None
    if cfg.kv_budget_gib is not None:
        budget, source = cfg.kv_budget_gib, "given"
    elif usable is not None:
        budget, source = usable - weights.per_gpu_gib - overhead.total_gib, "predicted"
    else:
        budget, source = None, None
    capacity = None
    if budget is not None:
        capacity = kv_capacity(layout, max(0.0, budget) * GIB, max_model_len=max_len,
                               max_num_batched_tokens=overhead.max_num_batched_tokens)
    fits, verdict = _verdict(weights, usable, budget, capacity, max_len, memory)
    if capacity is not None and fits and capacity.max_concurrency < 2:
        warnings.append(f"only {capacity.max_concurrency:.2f} requests fit at max_model_len "
                        f"{max_len:,}: long prompts queue or get preempted")
    if a.checkpoint_bytes and cfg.weight_dtype == "auto":
        gap = abs(weights.total_bytes - a.checkpoint_bytes) / a.checkpoint_bytes
        if gap > 0.05:
            warnings.append(f"architecture estimate and checkpoint index differ by "
                            f"{100 * gap:.0f}% (extra tensors such as MTP or vision layers?)")
    if a.assumed:
        warnings.append(f"{a.defaults_from} config (model_type {a.model_type!r} unknown to the "
                        "installed transformers): assumed " + "; ".join(a.assumed))
    if a.tower_params:
        warnings.append(f"vision/audio towers counted in the weights: {a.tower_params / 1e9:.2f} "
                        "B parameters, estimated from their shape")
    if a.mtp_layers and not serve_mtp:
        mtp_gib = params.mtp * weights.total_bytes / max(1, params.total) / GIB / tp
        warnings.append(f"{a.mtp_layers} MTP layer(s) ({params.mtp / 1e9:.2f} B parameters) not "
                        "counted: serving with --speculative-config method mtp adds about "
                        f"{mtp_gib:.2f} GiB per GPU")
    decode: list[DecodeFloor] = []
    if bandwidth:
        ctx = cfg.decode_context or max_len
        for b in sorted({1, cfg.decode_batch}):
            decode.append(decode_floor(a, weights, layout, bandwidth_gbs=bandwidth, batch=b,
                                       context_tokens=ctx))
    pool = sglang_pool(a, weights_gib=weights.per_gpu_gib, tp=tp,
                       kv_cache_dtype=kv_dtype, gpu_memory_gib=memory,
                       mem_fraction_static=cfg.mem_fraction_static,
                       speculative=cfg.speculative) if cfg.sglang_pool and memory else None
    return Plan(config=cfg, arch=a, gpu=gpu, tp=tp, num_gpus=num_gpus, memory_gib=memory,
                bandwidth_gbs=bandwidth, max_model_len=max_len, params=params, weights=weights,
                layout=layout, overhead=overhead, usable_gib=usable, kv_budget_gib=budget,
                kv_budget_source=source, capacity=capacity,
                token_report=legacy_token_report(cfg.vllm_version), decode=decode, fits=fits,
                verdict=verdict, warnings=warnings + (pool.notes if pool else []), sglang=pool)


def _verdict(weights: WeightPlan, usable: float | None, budget: float | None,
             capacity: KVCapacity | None, max_len: int, memory: float | None
             ) -> tuple[bool, str]:
    w = weights.per_gpu_gib
    if usable is not None and memory is not None and w > usable:
        return False, (f"OOM risk: weights alone are {w:.1f} GiB per GPU, more than the "
                       f"{usable:.1f} GiB vLLM may use ({memory:.1f} GiB × utilization); "
                       "quantize (fp8 halves, int4 quarters) or add GPUs")
    if budget is None or capacity is None:
        return True, (f"weights {w:.1f} GiB per GPU; give --gpu or --gpu-memory-gib (or "
                      "--kv-budget-gib) for the KV cache")
    if budget <= 0:
        return False, (f"OOM risk: no memory left for the KV cache ({budget:.2f} GiB after "
                       "weights and overhead); vLLM stops with 'No available memory for the "
                       "cache blocks'")
    if capacity.max_concurrency < 1:
        longest = int(capacity.max_concurrency * max_len)
        return False, (f"OOM risk: one request at max_model_len {max_len:,} needs more KV than "
                       f"the {budget:.2f} GiB budget; vLLM refuses to start (about {longest:,} "
                       "tokens would fit): lower --max-model-len, use fp8 KV or more GPUs")
    return True, (f"fits: {budget:.1f} GiB of KV per GPU holds {capacity.max_concurrency:.1f} "
                  f"requests of {max_len:,} tokens")


def sweep_max_model_len(p: Plan, lengths: Iterable[int]) -> list[tuple[int, int, float]]:
    """(max_model_len, KV tokens, max concurrency) for each length, same budget and layout."""
    if p.kv_budget_gib is None:
        return []
    out = []
    for n in lengths:
        c = kv_capacity(p.layout, max(0.0, p.kv_budget_gib) * GIB, max_model_len=n,
                        max_num_batched_tokens=p.overhead.max_num_batched_tokens)
        out.append((n, c.kv_cache_tokens, c.max_concurrency))
    return out

