"""Which mixer and which feed-forward each layer has, from any of the ways configs say it.

A layer's **mixer** decides its cache: attention (``full``, ``sliding``, ``mla``) keeps KV per
token; a recurrent mixer (``linear``: Gated DeltaNet, KDA; ``mamba``: Mamba 1/2, short
convolutions) keeps a fixed state per request; ``none`` (Nemotron-H's MLP-only and MoE-only
layers) keeps nothing. Its **feed-forward** is ``dense``, ``moe`` or ``none`` (a Mamba or
attention layer of Nemotron-H). Configs spell this in many ways, read here in one order:

Rule 1 (mixers): a per-layer list (``layers_block_type``, ``layer_types``), a pattern string
(``hybrid_override_pattern``), index lists (``full_attn_layers``, ``attn_layer_indices``,
``full_attn_idxs``, ``attn_type_list``), a period (``attn_layer_period``/``_offset``,
``full_attention_interval``), a window pattern (``sliding_window_pattern``, Qwen2's
``max_window_layers``), else every layer the model's attention.

Rule 2 (feed-forwards): the per-layer list's ``moe``/``mlp`` entries, ``layers_num_experts``,
``moe_layers``, ``mlp_only_layers`` with ``decoder_sparse_step``, ``first_k_dense_replace``
with ``moe_layer_freq``, ``interleave_moe_layer_step``, ``expert_layer_period``/``_offset``;
else every layer MoE when the model routes, dense when not.

"linear_attention" means a Mamba mixer in configs that describe one (``mamba_*`` or
``ssm_state_size`` keys: Nemotron-H, Granite-4.0-H, as transformers 5 writes them) and a
linear-attention one otherwise.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["FfnKind", "LayerKind", "ffn_kinds", "has_mamba", "mixer_kinds"]

LayerKind = Literal["full", "sliding", "mla", "linear", "mamba", "none"]
FfnKind = Literal["dense", "moe", "none"]


def has_mamba(cfg: dict[str, Any]) -> bool:
    """The config describes Mamba (or short-convolution) mixers."""
    return any(k.startswith("mamba_") or k in ("ssm_state_size", "conv_L_cache")
               for k in cfg if cfg[k] is not None) and not cfg.get("linear_num_value_heads")


def _kind_of(name: str, attn: LayerKind, mamba: bool) -> LayerKind:
    t = name.lower()
    if t in ("mlp", "moe", "-", "e"):
        return "none"
    if "mamba" in t or t in ("ssm", "conv", "m", "shortconv"):
        return "mamba"
    if "linear" in t or t == "recurrent":
        return "mamba" if mamba else "linear"
    if "sliding" in t or "chunked" in t or t == "local":
        return "sliding"
    return attn


def _from_indices(n: int, attn_at: set[int], attn: LayerKind, other: LayerKind
                  ) -> list[LayerKind]:
    return [attn if i in attn_at else other for i in range(n)]


def _window_kinds(cfg: dict[str, Any], n: int) -> list[LayerKind] | None:
    window = cfg.get("sliding_window")
    if not window or not cfg.get("use_sliding_window", True):
        return None
    pattern = cfg.get("sliding_window_pattern") or cfg.get("_sliding_window_pattern")
    if pattern:  # Gemma 2/3, Cohere 2: every pattern-th layer is global
        return ["full" if (i + 1) % int(pattern) == 0 else "sliding" for i in range(n)]
    if cfg.get("model_type") in ("mistral", "mixtral", "phi3", "starcoder2"):
        return ["sliding"] * n
    if "use_sliding_window" in cfg:  # Qwen2-style switch set to true
        first = int(cfg.get("max_window_layers", n))
        return ["full" if i < first else "sliding" for i in range(n)]
    return None


def mixer_kinds(cfg: dict[str, Any], n: int, attn: LayerKind) -> list[LayerKind]:
    """Rule 1: each layer's mixer (``attn`` is the model's attention: ``full`` or ``mla``)."""
    mamba = has_mamba(cfg)
    recurrent: LayerKind = "mamba" if mamba else "linear"
    for key in ("layers_block_type", "layer_types"):
        types = cfg.get(key)
        if isinstance(types, list) and len(types) == n:
            return [_kind_of(str(t), attn, mamba) for t in types]
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and len(pattern) == n:
        return [_kind_of(ch, attn, mamba) for ch in pattern]
    linear_cfg = cfg.get("linear_attn_config")
    if isinstance(linear_cfg, dict) and linear_cfg.get("full_attn_layers"):  # 1-based
        return _from_indices(n, {int(i) - 1 for i in linear_cfg["full_attn_layers"]}, attn,
                             "linear")
    for key in ("attn_layer_indices", "full_attn_idxs"):
        if isinstance(cfg.get(key), list):
            return _from_indices(n, {int(i) for i in cfg[key]}, attn, recurrent)
    if isinstance(cfg.get("attn_type_list"), list) and len(cfg["attn_type_list"]) == n:
        return [attn if int(t) == 1 else "linear" for t in cfg["attn_type_list"]]
    if cfg.get("attn_layer_period"):
        period, offset = int(cfg["attn_layer_period"]), int(cfg.get("attn_layer_offset", 0))
        return [attn if i % period == offset else recurrent for i in range(n)]
    if cfg.get("full_attention_interval"):
        every = int(cfg["full_attention_interval"])
        return [attn if (i + 1) % every == 0 else "linear" for i in range(n)]
    return _window_kinds(cfg, n) or [attn] * n


def _moe_at(cfg: dict[str, Any], n: int) -> list[bool]:
    if isinstance(cfg.get("layers_num_experts"), list):
        return [int(e) > 1 for e in cfg["layers_num_experts"]][:n]
    if isinstance(cfg.get("moe_layers"), list):
        at = {int(i) for i in cfg["moe_layers"]}
        return [i in at for i in range(n)]
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list) and len(freq) == n:
        return [bool(f) for f in freq]
    if cfg.get("interleave_moe_layer_step"):
        step = int(cfg["interleave_moe_layer_step"])
        return [(i + 1) % step == 0 for i in range(n)]
    if cfg.get("expert_layer_period"):
        period, offset = int(cfg["expert_layer_period"]), int(cfg.get("expert_layer_offset", 0))
        return [i % period == offset for i in range(n)]
    dense = {int(i) for i in cfg.get("mlp_only_layers") or []}
    first = int(cfg.get("first_k_dense_replace") or cfg.get("first_dense_layers") or 0)
    step = int(cfg.get("decoder_sparse_step") or 1)
    every = int(freq) if isinstance(freq, int) and freq > 0 else 1
    return [i not in dense and i >= first and (i + 1) % step == 0 and i % every == 0
            for i in range(n)]


def ffn_kinds(cfg: dict[str, Any], n: int, routed: bool) -> list[FfnKind]:
    """Rule 2: each layer's feed-forward (``routed``: the model has experts at all)."""
    for key in ("layers_block_type", "layer_types", "hybrid_override_pattern"):
        types = cfg.get(key)
        if isinstance(types, (list, str)) and len(types) == n and any(
                str(t).lower() in ("moe", "mlp", "e", "-") for t in types):
            # a Nemotron-H style list: a layer is a mixer or a feed-forward, never both
            return ["moe" if str(t).lower() in ("moe", "e") else
                    "dense" if str(t).lower() in ("mlp", "-") else "none" for t in types]
    if not routed:
        return ["dense"] * n
    return ["moe" if moe else "dense" for moe in _moe_at(cfg, n)]
