"""A ``config.json`` with its defaults filled the way the engines see them.

transformers writes only the values that differ from a config class's defaults (nested text
configs of multimodal models most of all), and vLLM and SGLang read configs through those
classes, so a missing key means "the class default", not "unknown". When the installed
transformers knows the ``model_type``, the dict is loaded through its config class (never
with remote code: a ``trust_remote_code`` model whose type transformers lacks is read as
written) and what the class computes (``layer_types`` from a window pattern, a hybrid's
per-layer block types, Llama 4's MoE layers) is kept. Otherwise the raw dict is used and the
plan says which fields it had to assume.

The result is one flat dict for the language model: a multimodal wrapper's ``text_config``
with the wrapper's dtype, quantization and tied-embedding switch, plus the wrapper's
``vision_config`` / ``audio_config`` (their weights are loaded too).
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["FilledConfig", "fill_defaults"]

#: derived attributes some config classes compute but leave out of ``to_dict()``
_DERIVED = ("num_hidden_layers", "layer_types", "layers_block_type", "layers_num_experts",
            "moe_layers", "head_dim", "mtp_layers_block_type")
#: wrapper keys that describe the whole checkpoint, kept when the text config is lifted out
_WRAPPER_KEYS = ("quantization_config", "torch_dtype", "dtype", "tie_word_embeddings",
                 "vision_config", "audio_config", "num_nextn_predict_layers", "architectures")
#: keys the memory math reads; a raw config missing one is read with a stated assumption
_ASSUMABLE = {
    "num_key_value_heads": "= num_attention_heads (no grouped-query attention)",
    "head_dim": "= hidden_size / num_attention_heads",
    "intermediate_size": "= 4 × hidden_size",
    "tie_word_embeddings": "= false (a separate lm_head)",
    "torch_dtype": "= bfloat16",
}


class FilledConfig(BaseModel):
    """The language model's keys, where their defaults came from, and what was assumed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    values: dict[str, Any]
    #: "transformers 5.24.0 Qwen3MoeConfig", or "as written" (type unknown to transformers)
    defaults_from: str
    #: keys the config left out and the class filled (only those the plan reads)
    filled: list[str]
    #: keys neither the config nor a class gave, with the value assumed
    assumed: list[str]


def _with_derived(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict(obj.to_dict())
    for key in _DERIVED:
        if out.get(key) is None:
            try:
                value = getattr(obj, key, None)
            except Exception:  # a property that needs a field this config lacks
                value = None
            if value is not None and not callable(value):
                out[key] = list(value) if isinstance(value, tuple) else value
    return out


def _through_transformers(raw: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """``raw`` loaded by transformers' class for its ``model_type`` (None: unknown type, or
    the class refused the values)."""
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        return None
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # "PyTorch not found"
    try:
        import transformers
        from transformers import CONFIG_MAPPING
    except ImportError:
        return None
    if model_type not in CONFIG_MAPPING:
        return None
    cls = CONFIG_MAPPING[model_type]
    quiet = logging.getLogger("transformers")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = cls(**{k: v for k, v in raw.items() if k != "model_type"})
    except Exception:
        return None
    finally:
        quiet.setLevel(level)
    full = _with_derived(obj)
    text = obj.get_text_config() if hasattr(obj, "get_text_config") else obj
    if text is not obj:
        inner = _with_derived(text)
        for key in _WRAPPER_KEYS:
            if key in full and inner.get(key) is None:
                inner[key] = full[key]
        full = inner
    return _flatten(full), f"transformers {transformers.__version__} {cls.__name__}"


#: nested blocks whose keys describe the whole model (DBRX's ``attn_config`` / ``ffn_config``)
_NESTED = {"attn_config": {"kv_n_heads": "num_key_value_heads"},
           "ffn_config": {"ffn_hidden_size": "moe_intermediate_size"}}


def _flatten(cfg: dict[str, Any]) -> dict[str, Any]:
    """Lift DBRX-style nested blocks to top-level keys (renamed where the name differs),
    without overriding a top-level key."""
    for block, renames in _NESTED.items():
        inner = cfg.get(block)
        if isinstance(inner, dict):
            for key, value in inner.items():
                cfg.setdefault(renames.get(key) or key, value)
    return cfg


def _lift_text_config(raw: dict[str, Any]) -> dict[str, Any]:
    inner = raw.get("text_config")
    if not isinstance(inner, dict):
        return _flatten(dict(raw))
    merged = dict(inner)
    for key in _WRAPPER_KEYS:
        if key in raw and key not in merged:
            merged[key] = raw[key]
    merged.setdefault("model_type", raw.get("model_type"))
    return _flatten(merged)


def fill_defaults(raw: dict[str, Any]) -> FilledConfig:
    """The language model's config with every default the engines would use."""
    written = _lift_text_config(raw)
    loaded = _through_transformers(raw)
    if loaded is None:
        assumed = [f"{k} {why}" for k, why in _ASSUMABLE.items()
                   if written.get(k) is None and not (k == "torch_dtype" and written.get("dtype"))]
        return FilledConfig(values=written, defaults_from="as written", filled=[],
                            assumed=assumed)
    values, source = loaded
    for key, value in written.items():  # keys the class does not know stay as written
        values.setdefault(key, value)
    read = set(_ASSUMABLE) | {"num_hidden_layers", "layer_types", "layers_block_type",
                             "mlp_only_layers", "decoder_sparse_step", "moe_layers",
                             "first_k_dense_replace", "moe_layer_freq", "sliding_window",
                             "num_experts_per_tok", "moe_intermediate_size",
                             "shared_expert_intermediate_size", "n_shared_experts"}
    filled = sorted(k for k in read if written.get(k) is None and values.get(k) is not None)
    return FilledConfig(values=values, defaults_from=source, filled=filled, assumed=[])
