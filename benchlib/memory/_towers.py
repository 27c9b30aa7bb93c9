"""Vision and audio towers of multimodal checkpoints: their parameters, estimated from shape.

vLLM loads a multimodal checkpoint's encoders with its language model, so their weights are
in "Model loading took" and must be in the plan. Towers are ViT- or Whisper-shaped encoders:
per layer ``4·h²`` of attention (with biases), an MLP of two (or, gated, three) ``h × i``
matrices and two norms; then the patch embedding (channels × patch² × temporal patch × h),
learned positions where the config has an image size, and a projector to the text model
(two layers over merged patches when patches are merged, one otherwise). Projectors and
patch-merge details differ between families, so this is an estimate to about a percent of a
tower (a tower is a few percent of a model); the plan says it counted one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["tower_params"]

_TOWERS = ("vision_config", "audio_config")


def _num(cfg: dict[str, Any], *keys: str) -> float:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return 0.0


def _tower(tc: dict[str, Any], text_hidden: int) -> int:
    layers = _num(tc, "depth", "num_hidden_layers", "num_layers", "encoder_layers")
    h = _num(tc, "embed_dim", "width", "d_model", "hidden_size")
    if not layers or not h:
        return 0
    inter = _num(tc, "intermediate_size", "encoder_ffn_dim") or h * _num(tc, "mlp_ratio") \
        or 4 * h
    gated = str(tc.get("hidden_act", "")).lower() in ("silu", "swiglu") or bool(
        tc.get("use_gated_mlp"))
    per_layer = 4 * h * h + 4 * h + (3 if gated else 2) * h * inter + inter + h + 4 * h
    patch = _num(tc, "patch_size")
    channels = _num(tc, "num_channels", "in_chans", "in_channels") or 3
    embed = channels * patch * patch * (_num(tc, "temporal_patch_size") or 1) * h if patch \
        else 0.0
    image = _num(tc, "image_size")
    positions = (image / patch) ** 2 * h if image and patch else 0.0
    out = _num(tc, "out_hidden_size", "projector_output_dim", "output_dim") or text_hidden
    merge = _num(tc, "spatial_merge_size") ** 2
    shuffle = _num(tc, "pixel_shuffle_ratio")
    if shuffle:
        merge = 1 / (shuffle * shuffle)
    wide = h * merge if merge > 1 else h
    projector = wide * wide + wide * out if merge > 1 else h * out
    return int(layers * per_layer + embed + positions + projector + 2 * h)


def tower_params(cfg: dict[str, Any], text_hidden: int) -> int:
    """Parameters of the config's vision and audio towers (0 for a text-only model)."""
    return sum(_tower(cfg[key], text_hidden) for key in _TOWERS
               if isinstance(cfg.get(key), dict))
