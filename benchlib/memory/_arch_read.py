"""Reading a model's architecture out of a Hugging Face ``config.json`` already loaded as a
dict (:func:`arch_from_dict`): every family's keys for the sizes, the mixer and feed-forward
kind of each layer, MLA, MoE, linear attention, Mamba, quantization, towers and MTP layers
(the specs they fill are :mod:`benchlib.memory._arch`'s)."""

from __future__ import annotations

from typing import Any

from benchlib._exceptions import UsageError
from benchlib.memory._arch import LinearAttnSpec, MambaSpec, MLASpec, ModelArch, MoESpec
from benchlib.memory._gating import feed_forward_is_gated
from benchlib.memory._hf_config import fill_defaults
from benchlib.memory._layers import ffn_kinds, has_mamba, mixer_kinds
from benchlib.memory._quant import read_quantization
from benchlib.memory._towers import tower_params

__all__ = ["arch_from_dict"]


def _first(cfg: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


#: GPT-2-era families (MLPs without a gate) with biases on every linear layer and LayerNorm
_BIASED = frozenset({"gpt2", "opt", "bloom", "gpt_neox", "phi", "starcoder2", "gpt_bigcode",
                     "gptj", "codegen", "gpt_neo", "biogpt", "xglm"})


def _learned_positions(cfg: dict[str, Any], model_type: str) -> int:
    """Rows of a learned position table: OPT keeps two more than its context."""
    if model_type == "opt":
        return int(cfg.get("max_position_embeddings") or 2048) + 2
    if model_type in ("gpt2", "gpt_bigcode", "gpt_neo", "biogpt", "xglm"):
        return int(_first(cfg, "n_positions", "max_position_embeddings", default=0))
    return 0


def _moe(cfg: dict[str, Any], gated: bool) -> MoESpec | None:
    experts = _first(cfg, "n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
    if not experts or int(experts) <= 1:
        return None
    top_k = _first(cfg, "num_experts_per_tok", "experts_per_token", "num_experts_per_token",
                   "moe_topk", "moe_top_k", "moe_k", default=1)
    inter = int(_first(cfg, "moe_intermediate_size", "expert_intermediate_size",
                       "intermediate_size"))
    shared = _first(cfg, "n_shared_experts", "num_shared_experts", default=0)
    shared_inter = _first(cfg, "shared_expert_intermediate_size", "shared_intermediate_size",
                          "moe_shared_expert_intermediate_size")
    if str(cfg.get("model_type", "")).startswith("llama4"):  # one shared expert, same size
        shared, shared_inter = 1, inter
    if shared_inter and not shared:
        shared = 1
    return MoESpec(
        num_experts=int(experts), top_k=int(top_k), expert_intermediate_size=inter,
        num_shared_experts=int(shared),
        shared_intermediate_size=int(shared_inter or inter * int(shared or 0)),
        expert_bias=cfg.get("model_type") == "gpt_oss", gated=gated)


def _mamba(cfg: dict[str, Any], hidden: int) -> MambaSpec:
    """The Mamba (or short-convolution) mixer's sizes, under each family's key names."""
    if cfg.get("conv_L_cache"):  # LFM2: gated short convolution over the hidden size
        return MambaSpec(kind="shortconv", d_inner=hidden, d_state=0,
                         d_conv=int(cfg["conv_L_cache"]), conv_bias=bool(cfg.get("conv_bias")))
    expand = float(_first(cfg, "mamba_expand", "expand", default=2))
    d_state = int(_first(cfg, "mamba_d_state", "ssm_state_size", "state_size", default=128))
    d_conv = int(_first(cfg, "mamba_d_conv", "conv_kernel", default=4))
    heads = int(_first(cfg, "mamba_n_heads", "mamba_num_heads", default=0))
    head_dim = int(_first(cfg, "mamba_d_head", "mamba_head_dim", default=0))
    d_inner = int(_first(cfg, "mamba_d_ssm", default=0)) or (heads * head_dim if heads and
                                                            head_dim else int(expand * hidden))
    fp32 = str(cfg.get("mamba_ssm_cache_dtype", "")).endswith("float32")
    conv_bias = bool(_first(cfg, "mamba_conv_bias", "use_conv_bias", default=True))
    proj_bias = bool(_first(cfg, "mamba_proj_bias", "use_bias", default=False))
    if heads:  # Mamba 2: multi-head SSM with grouped B/C
        return MambaSpec(kind="mamba2", d_inner=d_inner, d_state=d_state, d_conv=d_conv,
                         n_heads=heads, n_groups=int(_first(cfg, "mamba_n_groups", "n_groups",
                                                            default=1)),
                         conv_bias=conv_bias, proj_bias=proj_bias, state_fp32=fp32)
    dt_rank = cfg.get("mamba_dt_rank")
    rank = -(-hidden // 16) if dt_rank in (None, "auto") else int(dt_rank)
    return MambaSpec(kind="mamba1", d_inner=d_inner, d_state=d_state, d_conv=d_conv,
                     dt_rank=rank, conv_bias=conv_bias, proj_bias=proj_bias, state_fp32=fp32)


def _linear(cfg: dict[str, Any], num_heads: int) -> LinearAttnSpec | None:
    la = cfg.get("linear_attn_config")
    if isinstance(la, dict):  # Kimi Delta Attention
        heads, dim = int(la.get("num_heads", num_heads)), int(la["head_dim"])
        return LinearAttnSpec(kind="kda", num_v_heads=heads, head_v_dim=dim, num_k_heads=heads,
                              head_k_dim=dim, conv_kernel=int(la.get("short_conv_kernel_size", 4)),
                              recurrent_fp32=True)
    if cfg.get("linear_num_value_heads"):  # Qwen3-Next / Qwen3.5 Gated DeltaNet
        # Qwen3.5's mamba_ssm_dtype "float32" is vLLM 0.26.0's SSM cache dtype for it
        # (vllm/model_executor/models/config.py L744-768); else the model dtype
        return LinearAttnSpec(
            kind="gdn", num_v_heads=int(cfg["linear_num_value_heads"]),
            head_v_dim=int(cfg["linear_value_head_dim"]),
            num_k_heads=int(cfg["linear_num_key_heads"]),
            head_k_dim=int(cfg["linear_key_head_dim"]),
            conv_kernel=int(cfg.get("linear_conv_kernel_dim", 4)),
            recurrent_fp32=str(cfg.get("mamba_ssm_dtype", "")).endswith("float32"))
    return None


#: the keys every decoder config gives (one spelling of each), in the order they are read
_REQUIRED = (("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
             ("hidden_size", "d_model", "n_embd"), ("num_attention_heads", "n_head", "n_heads"),
             ("vocab_size",))


def _index_pattern(value: Any) -> str | None:
    """``index_topk_pattern`` as one letter per layer (vLLM indexes it either way)."""
    if value is None:
        return None
    return value if isinstance(value, str) else "".join(str(x) for x in value)


def _required(cfg: dict[str, Any], source: str) -> tuple[int, ...]:
    """The four sizes every decoder has; a missing or non-integer one is named, with the file
    it was looked for in."""
    values = []
    for keys in _REQUIRED:
        value = _first(cfg, *keys)
        spelled = " / ".join(keys)
        if value is None:
            raise UsageError("--model-config", f"{source}: not a decoder config.json: no "
                             f"{spelled} (model_type {cfg.get('model_type', 'not given')!r})")
        try:
            values.append(int(value))
        except (TypeError, ValueError):
            raise UsageError("--model-config", f"{source}: {spelled} is {value!r}, not a "
                             "whole number") from None
    return tuple(values)


def arch_from_dict(raw: dict[str, Any], *, name: str = "model", source: str | None = None,
                   fill: bool = True) -> ModelArch:
    """Parse a ``config.json`` already loaded as a dict (files are read by
    :func:`benchlib.memory.load_model_config`); ``source``: the file, for messages;
    ``fill``: complete the defaults through transformers' config class (off for dicts built
    from a GGUF header, which states every size)."""
    if fill:
        filled = fill_defaults(raw)
        cfg, defaults_from, assumed = filled.values, filled.defaults_from, filled.assumed
    else:
        cfg, defaults_from, assumed = dict(raw), "as written", []
    n, hidden, heads, vocab = _required(cfg, source or name)
    model_type = str(cfg.get("model_type", "unknown"))
    kv_heads = int(_first(cfg, "num_key_value_heads", "multi_query_group_num", "n_head_kv",
                          "num_kv_heads",
                          default=1 if cfg.get("multi_query") is True else heads))
    mla = None
    if cfg.get("kv_lora_rank"):
        idx_dim = cfg.get("index_head_dim") if cfg.get("index_topk") else None
        mla = MLASpec(
            kv_lora_rank=int(cfg["kv_lora_rank"]), qk_rope_head_dim=int(cfg["qk_rope_head_dim"]),
            qk_nope_head_dim=int(cfg.get("qk_nope_head_dim", 128)),
            v_head_dim=int(cfg.get("v_head_dim", 128)),
            q_lora_rank=int(cfg["q_lora_rank"]) if cfg.get("q_lora_rank") else None,
            index_head_dim=int(idx_dim) if idx_dim else None,
            index_n_heads=int(cfg["index_n_heads"]) if idx_dim and cfg.get("index_n_heads")
            else None,
            index_topk_freq=max(1, int(cfg.get("index_topk_freq") or 1)),
            index_skip_topk_offset=int(cfg.get("index_skip_topk_offset", 2)),
            index_topk_pattern=_index_pattern(cfg.get("index_topk_pattern")))
    head_dim = int(_first(cfg, "head_dim", default=hidden // heads))
    if mla is not None:
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    kinds = mixer_kinds(cfg, n, "mla" if mla is not None else "full")
    window = cfg.get("sliding_window") or cfg.get("attention_chunk_size")
    window = int(window) if window and "sliding" in kinds else None
    linear = _linear(cfg, heads) if "linear" in kinds else None
    if "linear" in kinds and linear is None:
        raise UsageError("--model-config", f"{source or name}: linear-attention layers without "
                         "their state sizes (linear_attn_config or linear_*_head_dim keys)")
    parallel = cfg.get("model_type") == "falcon_h1"
    mamba = _mamba(cfg, hidden) if "mamba" in kinds or parallel or (
        has_mamba(cfg) and "none" in kinds) else None
    quant = read_quantization(raw, None) or cfg.get("quantization_config")
    dtype = str(_first(cfg, "torch_dtype", "dtype", default="bfloat16")).removeprefix("torch.")
    gated = feed_forward_is_gated(cfg)
    moe = _moe(cfg, gated)
    ffns = ffn_kinds(cfg, n, moe is not None)
    inter = int(_first(cfg, "intermediate_size_mlp", "intermediate_size", "ffn_hidden_size",
                       "n_inner", "ffn_dim", default=4 * hidden))
    biased = model_type in _BIASED
    bias_key = _first(cfg, "mlp_bias", "use_bias", "bias", "enable_bias")
    if moe is None and "moe" in ffns:
        raise UsageError("--model-config", f"{source or name}: MoE layers without an expert "
                         "count (n_routed_experts / num_experts / num_local_experts)")
    return ModelArch(
        name=name, model_type=model_type, num_layers=n,
        hidden_size=hidden, num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        vocab_size=vocab, intermediate_size=inter,
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        attention_bias=bool(_first(cfg, "attention_bias", "use_bias", "bias", "enable_bias",
                                   default=model_type == "qwen2" or biased)),
        gated_mlp=gated,
        mlp_bias=bool(bias_key) if bias_key is not None else biased,
        learned_positions=_learned_positions(cfg, model_type), norm_bias=biased,
        attn_output_gate=bool(cfg.get("attn_output_gate", model_type == "qwen3_next")),
        layer_kinds=tuple(kinds), ffn_kinds=tuple(ffns), sliding_window=window, mla=mla,
        moe=moe, linear=linear, mamba=mamba, parallel_mamba=parallel,
        tower_params=tower_params(cfg, hidden), defaults_from=defaults_from,
        assumed=tuple(assumed), torch_dtype=dtype,
        max_position_embeddings=int(cfg["max_position_embeddings"])
        if cfg.get("max_position_embeddings") else None,
        quantization=dict(quant) if isinstance(quant, dict) else None,
        mtp_layers=int(cfg.get("num_nextn_predict_layers") or cfg.get("mtp_num_hidden_layers")
                       or 0))
