"""Decode floor: the bytes one decode step must read, divided by memory bandwidth.

A decode step reads every weight the batch touches once (dense weights always; for MoE only
the experts some token in the batch was routed to) plus each request's KV cache up to its
context. At batch 1 that is the active parameters; at batch B the expected number of distinct
experts per MoE layer is ``E × (1 − (1 − k/E)^B)`` under uniform routing. Dividing by the
HBM bandwidth gives a TPOT no engine can beat on that GPU: a floor, not a prediction.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from benchlib.memory._arch import ModelArch
from benchlib.memory._kv import KVLayout
from benchlib.memory._weights import WeightPlan

__all__ = ["DecodeFloor", "decode_floor", "experts_touched"]


class DecodeFloor(BaseModel):
    """Bytes read per step on one GPU and the resulting TPOT floor / tokens-per-second ceiling."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    batch: int
    context_tokens: int
    weight_bytes: int
    kv_bytes: int
    bandwidth_gbs: float
    tpot_ms: float
    #: per request (1 / TPOT)
    tokens_per_s_per_request: float
    #: whole batch (B / TPOT)
    tokens_per_s: float


def experts_touched(num_experts: int, top_k: int, batch: int) -> float:
    """Expected distinct experts one MoE layer reads for ``batch`` tokens (uniform routing)."""
    if num_experts <= 0:
        return 0.0
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** batch)


def decode_floor(a: ModelArch, weights: WeightPlan, layout: KVLayout, *, bandwidth_gbs: float,
                 batch: int = 1, context_tokens: int = 4096) -> DecodeFloor:
    """TPOT floor on one GPU of the TP group for ``batch`` requests at ``context_tokens`` each.

    The embedding table is not read (a lookup reads one row per token); everything else on
    the GPU is, except the routed experts no token picked.
    """
    embed = weights.bytes_by_role.get("embed", 0)
    embed_gpu = 0 if a.tie_embeddings else embed * weights.per_gpu_bytes // max(
        1, weights.total_bytes)
    dense = weights.per_gpu_bytes - weights.experts_per_gpu_bytes - embed_gpu
    experts = 0.0
    if a.moe is not None and weights.experts_per_gpu_bytes:
        frac = experts_touched(a.moe.num_experts, a.moe.top_k, batch) / a.moe.num_experts
        experts = weights.experts_per_gpu_bytes * frac
    window = next((x.window for x in layout.layers if x.kind == "sliding" and x.window), None)
    sliding_ctx = min(context_tokens, window) if window else context_tokens
    kv = batch * (context_tokens * layout.bytes_per_token
                  + sliding_ctx * layout.sliding_bytes_per_token
                  + layout.state_bytes_per_request)
    total = dense + experts + kv
    tpot_s = total / (bandwidth_gbs * 1e9)
    return DecodeFloor(
        batch=batch, context_tokens=context_tokens, weight_bytes=int(dense + experts),
        kv_bytes=int(kv), bandwidth_gbs=bandwidth_gbs, tpot_ms=tpot_s * 1e3,
        tokens_per_s_per_request=1.0 / tpot_s if tpot_s else 0.0,
        tokens_per_s=batch / tpot_s if tpot_s else 0.0)
