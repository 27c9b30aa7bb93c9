"""Parameter counts from the architecture, split by the role each tensor plays.

The split matters twice: quantization keeps some roles in high precision (embeddings, lm_head,
norms, routers), and decode reads only some of them per token (the routed experts a token
picked, not the other 250). Counts follow the Hugging Face module shapes (gated MLPs, biases
where the family has them); norms and small vectors are counted but are noise.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from benchlib.memory._arch import ModelArch

__all__ = ["ParamBreakdown", "ParamRole", "count_params"]

ParamRole = Literal["embed", "lm_head", "attention", "linear_attn", "mlp", "experts",
                    "shared_experts", "router", "norm"]


class ParamBreakdown(BaseModel):
    """Parameters per role, the total and the active count per token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    by_role: dict[str, int]
    #: one routed expert's parameters in one MoE layer (gate, up, down and biases)
    expert_params: int
    moe_layers: int
    total: int
    #: parameters a decode step reads per token: everything but the routed experts it did not
    #: pick and the embedding table (a lookup reads one row; a tied lm_head still counts)
    active: int
    source: Literal["architecture", "safetensors index"]


def _attention_params(a: ModelArch) -> int:
    h, d = a.hidden_size, a.head_dim
    if a.mla is not None:
        m = a.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = (h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * a.num_heads * qk
             if m.q_lora_rank else h * a.num_heads * qk)
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        kv += m.kv_lora_rank * a.num_heads * (m.qk_nope_head_dim + m.v_head_dim)
        o = a.num_heads * m.v_head_dim * h
        idx = 0
        if m.index_head_dim and m.index_n_heads:
            q_in = m.q_lora_rank or h
            idx = q_in * m.index_n_heads * m.index_head_dim + h * m.index_head_dim
            idx += h * m.index_n_heads + 2 * m.index_head_dim
        return q + kv + o + idx
    q = h * a.num_heads * d
    kv = 2 * h * a.num_kv_heads * d
    o = a.num_heads * d * h
    bias = (a.num_heads + 2 * a.num_kv_heads) * d + (h if a.model_type == "gpt_oss" else 0)
    sinks = a.num_heads if a.model_type == "gpt_oss" else 0
    return q + kv + o + (bias if a.attention_bias else 0) + sinks


def _linear_attn_params(a: ModelArch) -> int:
    la = a.linear
    if la is None:
        return 0
    h = a.hidden_size
    k, v = la.num_k_heads * la.head_k_dim, la.num_v_heads * la.head_v_dim
    conv = (2 * k + v) * la.conv_kernel
    if la.kind == "gdn":  # in_proj_qkvz + in_proj_ba + conv + A/dt + norm + out_proj
        return h * (2 * k + 2 * v) + h * 2 * la.num_v_heads + conv + 2 * la.num_v_heads \
            + la.head_v_dim + v * h
    # KDA: q/k/v/o projections, low-rank forget and output gates, beta, conv, A/dt
    gates = 2 * (h * la.head_v_dim + la.head_v_dim * v)
    return h * (2 * k + v) + v * h + gates + h * la.num_v_heads + conv + 3 * la.num_v_heads


def count_params(a: ModelArch) -> ParamBreakdown:
    """Count parameters by role; the safetensors index total wins for the total when present."""
    h = a.hidden_size
    roles: dict[str, int] = dict.fromkeys(
        ("embed", "lm_head", "attention", "linear_attn", "mlp", "experts", "shared_experts",
         "router", "norm"), 0)
    roles["embed"] = a.vocab_size * h
    roles["lm_head"] = 0 if a.tie_embeddings else a.vocab_size * h
    attn, lin = _attention_params(a), _linear_attn_params(a)
    moe = a.moe
    expert = 0
    if moe is not None:
        expert = 3 * h * moe.expert_intermediate_size
        if moe.expert_bias:
            expert += 2 * moe.expert_intermediate_size + h
    moe_layers = 0
    for i, kind in enumerate(a.layer_kinds):
        if kind == "linear":
            roles["linear_attn"] += lin
        else:
            roles["attention"] += attn
        roles["norm"] += 2 * h
        if moe is not None and a.is_moe_layer(i):
            moe_layers += 1
            roles["experts"] += moe.num_experts * expert
            roles["router"] += h * moe.num_experts + (moe.num_experts if moe.expert_bias else 0)
            roles["shared_experts"] += 3 * h * moe.shared_intermediate_size
        else:
            roles["mlp"] += 3 * h * a.intermediate_size
    roles["norm"] += h
    total = sum(roles.values())
    unused = 0
    if moe is not None:
        unused = moe_layers * (moe.num_experts - moe.top_k) * expert
    active = total - unused - (0 if a.tie_embeddings else roles["embed"])
    source: Literal["architecture", "safetensors index"] = "architecture"
    if a.checkpoint_params:
        active = round(active * a.checkpoint_params / total)
        total, source = a.checkpoint_params, "safetensors index"
    return ParamBreakdown(by_role=roles, expert_params=expert, moe_layers=moe_layers,
                          total=total, active=active, source=source)
