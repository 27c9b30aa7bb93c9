"""Parameter counts from the architecture, split by the role each tensor plays.

The split matters twice: quantization keeps some roles in high precision (embeddings, lm_head,
norms, routers), and decode reads only some of them per token (the routed experts a token
picked, not the other 250). Counts follow the Hugging Face module shapes (gated MLPs, biases
where the family has them); norms and small vectors are counted but are noise. Each layer is
counted by its own mixer (attention, linear attention, Mamba, none) and feed-forward (dense,
MoE, none), so interleaved and hybrid models come out right. Vision and audio towers are in
the total (vLLM loads them); multi-token-prediction layers are counted apart (``mtp``), since
they are loaded only for MTP speculation and published totals differ on including them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from benchlib.memory._arch import MambaSpec, ModelArch

__all__ = ["ParamBreakdown", "ParamRole", "count_params"]

ParamRole = Literal["embed", "lm_head", "attention", "linear_attn", "mamba", "mlp", "experts",
                    "shared_experts", "router", "norm", "towers"]


class ParamBreakdown(BaseModel):
    """Parameters per role, the total and the active count per token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    by_role: dict[str, int]
    #: one routed expert's parameters in one MoE layer (gate if it has one, up, down, biases)
    expert_params: int
    moe_layers: int
    total: int
    #: parameters of the multi-token-prediction layers, not in ``total`` (loaded only when
    #: serving with MTP speculation)
    mtp: int = 0
    #: parameters a decode step reads per token: everything but the routed experts it did not
    #: pick and the embedding table (a lookup reads one row; a tied lm_head still counts)
    active: int
    source: Literal["architecture", "safetensors index"]


def _indexer_params(a: ModelArch) -> int:
    """One DSA indexer (query and key projections, head weights, key norm); layers that
    share another's top-k (``MLASpec.has_indexer``) have none."""
    m = a.mla
    if m is None or not (m.index_head_dim and m.index_n_heads):
        return 0
    h, q_in = a.hidden_size, m.q_lora_rank or a.hidden_size
    return (q_in * m.index_n_heads * m.index_head_dim + h * m.index_head_dim
            + h * m.index_n_heads + 2 * m.index_head_dim)


def _attention_params(a: ModelArch) -> int:
    """One attention layer's parameters, without a DSA indexer (:func:`_indexer_params`)."""
    h, d = a.hidden_size, a.head_dim
    if a.mla is not None:
        m = a.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = (h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * a.num_heads * qk
             if m.q_lora_rank else h * a.num_heads * qk)
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        kv += m.kv_lora_rank * a.num_heads * (m.qk_nope_head_dim + m.v_head_dim)
        o = a.num_heads * m.v_head_dim * h
        return q + kv + o
    q = h * a.num_heads * d * (2 if a.attn_output_gate else 1)
    kv = 2 * h * a.num_kv_heads * d
    o = a.num_heads * d * h
    o_bias = a.model_type == "gpt_oss" or a.norm_bias  # GPT-2-era families bias o_proj too
    bias = (a.num_heads + 2 * a.num_kv_heads) * d + (h if o_bias else 0)
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


def _mamba_params(m: MambaSpec, h: int) -> int:
    """One Mamba / short-convolution mixer: projections, convolution, SSM vectors, norm."""
    conv = m.conv_dim * m.d_conv + (m.conv_dim if m.conv_bias else 0)
    if m.kind == "shortconv":  # in_proj to B, C, x; depthwise conv; out_proj
        return h * 3 * h + conv + h * h
    out = m.d_inner * h + (h if m.proj_bias else 0)
    if m.kind == "mamba2":  # in_proj to z, x, B, C, dt; dt_bias, A_log, D; gated norm
        proj = h * (2 * m.d_inner + 2 * m.n_groups * m.d_state + m.n_heads)
        proj += (2 * m.d_inner + 2 * m.n_groups * m.d_state + m.n_heads) if m.proj_bias else 0
        return proj + conv + 3 * m.n_heads + m.d_inner + out
    proj = h * 2 * m.d_inner + (2 * m.d_inner if m.proj_bias else 0)
    x_proj = m.d_inner * (m.dt_rank + 2 * m.d_state)
    dt_proj = m.dt_rank * m.d_inner + m.d_inner
    return proj + conv + x_proj + dt_proj + m.d_inner * m.d_state + m.d_inner + out \
        + m.dt_rank + 2 * m.d_state


def count_params(a: ModelArch) -> ParamBreakdown:
    """Count parameters by role; the safetensors index total wins for the total when present."""
    h = a.hidden_size
    roles: dict[str, int] = dict.fromkeys(
        ("embed", "lm_head", "attention", "linear_attn", "mamba", "mlp", "experts",
         "shared_experts", "router", "norm", "towers"), 0)
    roles["embed"] = a.vocab_size * h
    roles["lm_head"] = 0 if a.tie_embeddings else a.vocab_size * h
    attn, lin, idx = _attention_params(a), _linear_attn_params(a), _indexer_params(a)
    mamba = _mamba_params(a.mamba, h) if a.mamba is not None else 0
    moe = a.moe
    expert = shared = 0
    if moe is not None:  # gate, up, down per expert, or up, down where the expert has no gate
        mats = 3 if moe.gated else 2
        expert = mats * h * moe.expert_intermediate_size
        if moe.expert_bias:
            expert += (mats - 1) * moe.expert_intermediate_size + h
        shared = mats * h * moe.shared_intermediate_size
    i_d = a.intermediate_size
    dense = (3 if a.gated_mlp else 2) * h * i_d
    dense += ((2 if a.gated_mlp else 1) * i_d + h) if a.mlp_bias else 0
    norm = 2 * h if a.norm_bias else h
    moe_layers = 0
    for i, kind in enumerate(a.layer_kinds):
        if kind == "linear":
            roles["linear_attn"] += lin
        elif kind == "mamba":
            roles["mamba"] += mamba
        elif kind != "none":
            roles["attention"] += attn
            if a.mla is not None and a.mla.has_indexer(i, a.num_layers):
                roles["attention"] += idx
            roles["mamba"] += mamba if a.parallel_mamba else 0
        ffn = a.ffn(i)
        roles["norm"] += norm * ((kind != "none") + (ffn != "none"))
        if moe is not None and ffn == "moe":
            moe_layers += 1
            roles["experts"] += moe.num_experts * expert
            roles["router"] += h * moe.num_experts + (moe.num_experts if moe.expert_bias else 0)
            roles["shared_experts"] += shared
        elif ffn == "dense":
            roles["mlp"] += dense
    roles["norm"] += norm
    roles["embed"] += a.learned_positions * h
    roles["towers"] = a.tower_params
    total = sum(roles.values())
    # an MTP layer: one decoder layer (attention + the last layer's feed-forward), two input
    # norms, the projection of [embedding; hidden] back to hidden and its head's norm
    last = a.ffn(a.num_layers - 1)
    ffn_last = (moe.num_experts * expert + h * moe.num_experts + shared) \
        if moe is not None and last == "moe" else dense
    mtp = a.mtp_layers * (attn + idx + ffn_last + 2 * h * h + 5 * h)
    unused = 0
    if moe is not None:
        unused = moe_layers * (moe.num_experts - moe.top_k) * expert
    active = total - unused - (0 if a.tie_embeddings else roles["embed"]) - roles["towers"]
    source: Literal["architecture", "safetensors index"] = "architecture"
    if a.checkpoint_params:
        active = round(active * a.checkpoint_params / total)
        total, source = a.checkpoint_params, "safetensors index"
    return ParamBreakdown(by_role=roles, expert_params=expert, moe_layers=moe_layers,
                          total=total, mtp=mtp, active=active, source=source)
