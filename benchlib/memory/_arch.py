"""A model's architecture as the memory math needs it, read from a Hugging Face ``config.json``.

One reader covers the families whose caches differ in kind, not just in size: dense GQA
(Llama, Qwen), sliding-window hybrids (gpt-oss, Gemma, Mistral), MLA (DeepSeek, Kimi, GLM-5),
hybrid linear attention (Qwen3-Next's Gated DeltaNet, Kimi-Linear's KDA) and MoE on top of any
of them. Each layer gets a kind (``full``, ``sliding``, ``mla``, ``linear``) because that, not
the model's name, decides how vLLM sizes its cache.

This module parses a config already loaded as a dict; finding and opening the file (a folder,
a ``config.json`` or a GGUF) is :mod:`benchlib.memory._load`'s job, so the GGUF reader can
build on this parser without a loop between the two.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from benchlib._exceptions import UsageError

__all__ = [
    "LayerKind",
    "LinearAttnSpec",
    "MLASpec",
    "MoESpec",
    "ModelArch",
    "arch_from_dict",
]

LayerKind = Literal["full", "sliding", "mla", "linear"]


class MLASpec(BaseModel):
    """Multi-head latent attention: the cache holds one latent (``kv_lora_rank``) plus the
    shared RoPE key (``qk_rope_head_dim``) per token and layer, whatever the head count."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None
    #: DeepSeek-V3.2 / GLM-5 sparse attention (DSA): the indexer keeps its own key cache
    index_head_dim: int | None = None
    index_n_heads: int | None = None


class MoESpec(BaseModel):
    """Mixture of experts: which layers route, how many experts, how many each token uses."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    num_experts: int
    top_k: int
    expert_intermediate_size: int
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0
    #: layers before the first MoE layer that keep a dense MLP (``first_k_dense_replace``)
    first_dense_layers: int = 0
    #: every n-th layer is MoE (``decoder_sparse_step`` / ``moe_layer_freq``)
    layer_freq: int = 1
    expert_bias: bool = False


class LinearAttnSpec(BaseModel):
    """A linear-attention (recurrent) layer: a fixed state per request, none per token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["gdn", "kda"]
    num_v_heads: int
    head_v_dim: int
    num_k_heads: int
    head_k_dim: int
    conv_kernel: int
    #: KDA keeps its recurrent state in float32 in vLLM; Gated DeltaNet in the model dtype
    recurrent_fp32: bool


class ModelArch(BaseModel):
    """Everything about a model that decides its weights, KV cache and decode traffic."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model_type: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    tie_embeddings: bool = False
    attention_bias: bool = False
    layer_kinds: tuple[LayerKind, ...]
    sliding_window: int | None = None
    mla: MLASpec | None = None
    moe: MoESpec | None = None
    linear: LinearAttnSpec | None = None
    torch_dtype: str = "bfloat16"
    max_position_embeddings: int | None = None
    quantization: dict[str, Any] | None = None
    #: ``model.safetensors.index.json`` metadata next to the config, when there is one
    checkpoint_bytes: int | None = None
    checkpoint_params: int | None = None
    #: multi-token-prediction layers shipped in the checkpoint (loaded only for MTP decoding)
    mtp_layers: int = 0

    def count(self, kind: LayerKind) -> int:
        return sum(1 for k in self.layer_kinds if k == kind)

    def is_moe_layer(self, index: int) -> bool:
        moe = self.moe
        if moe is None or index < moe.first_dense_layers:
            return False
        return (index + 1) % moe.layer_freq == 0 if moe.layer_freq > 1 else True


def _first(cfg: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def _layer_kinds(cfg: dict[str, Any], n: int, mla: bool) -> tuple[list[LayerKind], int | None]:
    """Per-layer cache kind from ``layer_types``, hybrid-linear keys or sliding-window keys."""
    attn: LayerKind = "mla" if mla else "full"
    window = cfg.get("sliding_window")
    linear_cfg = cfg.get("linear_attn_config")
    if isinstance(linear_cfg, dict) and linear_cfg.get("full_attn_layers"):
        full = {int(i) - 1 for i in linear_cfg["full_attn_layers"]}  # 1-based in Kimi-Linear
        return [attn if i in full else "linear" for i in range(n)], None
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == n:
        kinds: list[LayerKind] = []
        for t in types:
            t = str(t)
            if "linear" in t or t in ("mamba", "ssm", "recurrent"):
                kinds.append("linear")
            elif "sliding" in t or t in ("local", "chunked_attention"):
                kinds.append("sliding")
            else:
                kinds.append(attn)
        return kinds, int(window) if window and "sliding" in kinds else None
    interval = cfg.get("full_attention_interval")
    if interval:
        return [attn if (i + 1) % int(interval) == 0 else "linear" for i in range(n)], None
    if window and cfg.get("use_sliding_window", True):
        pattern = _first(cfg, "sliding_window_pattern", "_sliding_window_pattern")
        if pattern:  # Gemma 2/3: every pattern-th layer is global
            p = int(pattern)
            return ["full" if (i + 1) % p == 0 else "sliding" for i in range(n)], int(window)
        if cfg.get("model_type") in ("mistral", "mixtral", "phi3", "starcoder2"):
            return ["sliding"] * n, int(window)
        if "use_sliding_window" in cfg:  # Qwen2-style switch set to true
            first_full = int(cfg.get("max_window_layers", n))
            return ["full" if i < first_full else "sliding" for i in range(n)], int(window)
    return [attn] * n, None


def _moe(cfg: dict[str, Any], n_layers: int) -> MoESpec | None:
    experts = _first(cfg, "n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
    if not experts or int(experts) <= 1:
        return None
    top_k = _first(cfg, "num_experts_per_tok", "experts_per_token", "num_experts_per_token",
                   "moe_topk", "moe_k", default=1)
    inter = int(_first(cfg, "moe_intermediate_size", "expert_intermediate_size",
                       "intermediate_size"))
    shared = _first(cfg, "n_shared_experts", "num_shared_experts", default=0)
    shared_inter = cfg.get("shared_expert_intermediate_size")
    if shared_inter and not shared:
        shared = 1
    first_dense = _first(cfg, "first_k_dense_replace", "first_dense_layers", default=0)
    mlp_only = cfg.get("mlp_only_layers") or []
    if mlp_only and not first_dense:
        first_dense = len(mlp_only)
    freq = _first(cfg, "decoder_sparse_step", "moe_layer_freq", default=1)
    return MoESpec(
        num_experts=int(experts), top_k=int(top_k), expert_intermediate_size=inter,
        num_shared_experts=int(shared),
        shared_intermediate_size=int(shared_inter or inter * int(shared or 0)),
        first_dense_layers=min(int(first_dense), n_layers), layer_freq=max(1, int(freq)),
        expert_bias=cfg.get("model_type") == "gpt_oss")


def _linear(cfg: dict[str, Any], num_heads: int) -> LinearAttnSpec | None:
    la = cfg.get("linear_attn_config")
    if isinstance(la, dict):  # Kimi Delta Attention
        heads, dim = int(la.get("num_heads", num_heads)), int(la["head_dim"])
        return LinearAttnSpec(kind="kda", num_v_heads=heads, head_v_dim=dim, num_k_heads=heads,
                              head_k_dim=dim, conv_kernel=int(la.get("short_conv_kernel_size", 4)),
                              recurrent_fp32=True)
    if cfg.get("linear_num_value_heads"):  # Qwen3-Next Gated DeltaNet
        return LinearAttnSpec(
            kind="gdn", num_v_heads=int(cfg["linear_num_value_heads"]),
            head_v_dim=int(cfg["linear_value_head_dim"]),
            num_k_heads=int(cfg["linear_num_key_heads"]),
            head_k_dim=int(cfg["linear_key_head_dim"]),
            conv_kernel=int(cfg.get("linear_conv_kernel_dim", 4)), recurrent_fp32=False)
    return None


def _text_config(raw: dict[str, Any]) -> dict[str, Any]:
    """The language model's keys: nested ``text_config`` (multimodal wrappers) wins, with the
    wrapper's quantization and dtype kept."""
    inner = raw.get("text_config")
    if isinstance(inner, dict) and inner.get("num_hidden_layers"):
        merged = dict(inner)
        for key in ("quantization_config", "torch_dtype", "dtype", "tie_word_embeddings"):
            if key in raw and key not in merged:
                merged[key] = raw[key]
        return merged
    return raw


#: the keys every decoder config gives (one spelling of each), in the order they are read
_REQUIRED = (("num_hidden_layers", "n_layer", "num_layers"), ("hidden_size", "d_model", "n_embd"),
             ("num_attention_heads", "n_head"), ("vocab_size",))


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


def arch_from_dict(raw: dict[str, Any], *, name: str = "model",
                   source: str | None = None) -> ModelArch:
    """Parse a ``config.json`` already loaded as a dict (files are read by
    :func:`benchlib.memory.load_model_config`); ``source``: the file, for messages."""
    cfg = _text_config(raw)
    n, hidden, heads, vocab = _required(cfg, source or name)
    kv_heads = int(_first(cfg, "num_key_value_heads", "multi_query_group_num", "n_head_kv",
                          default=heads))
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
            else None)
    head_dim = int(_first(cfg, "head_dim", default=hidden // heads))
    if mla is not None:
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    kinds, window = _layer_kinds(cfg, n, mla is not None)
    linear = _linear(cfg, heads) if "linear" in kinds else None
    if "linear" in kinds and linear is None:
        raise UsageError("--model-config", f"{name}: linear-attention layers without their "
                         "state sizes (linear_attn_config or linear_*_head_dim keys)")
    quant = raw.get("quantization_config") or cfg.get("quantization_config")
    dtype = str(_first(cfg, "torch_dtype", "dtype", default="bfloat16")).removeprefix("torch.")
    moe = _moe(cfg, n)
    inter = int(_first(cfg, "intermediate_size", "ffn_hidden_size", "n_inner",
                       default=4 * hidden))
    return ModelArch(
        name=name, model_type=str(cfg.get("model_type", "unknown")), num_layers=n,
        hidden_size=hidden, num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        vocab_size=vocab, intermediate_size=inter,
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        attention_bias=bool(cfg.get("attention_bias", cfg.get("model_type") == "qwen2")),
        layer_kinds=tuple(kinds), sliding_window=window, mla=mla, moe=moe, linear=linear,
        torch_dtype=dtype,
        max_position_embeddings=int(cfg["max_position_embeddings"])
        if cfg.get("max_position_embeddings") else None,
        quantization=dict(quant) if isinstance(quant, dict) else None,
        mtp_layers=int(cfg.get("num_nextn_predict_layers") or cfg.get("mtp_num_hidden_layers")
                       or 0))
