"""A speculative drafter's weights and KV layers beside the target's, as vLLM 0.26.0 loads them.

vLLM loads the drafter inside the target's "Model loading took" measurement
(``gpu_model_runner.load_model``), then (``llm_base_proposer.py``
``_maybe_share_embeddings`` / ``_maybe_share_lm_head``) deletes the drafter's embedding and
LM head and points it at the target's whenever the drafter's checkpoint has none of its own —
for every method but a separate draft model (``--speculative-config method draft_model``),
which keeps its own. A checkpoint "has its own" when it names ``embed_tokens`` / ``lm_head``
tensors (``utils.py`` ``process_eagle_weight``); a config-only folder, or dummy weights,
names none, so both are shared. When the drafter's checkpoint does name its own, vLLM still
shares a copy identical to the target's; the plan cannot compare tensors and keeps it, and
says so.

What a drafter adds beyond its decoder layers: DFlash (``qwen3_dflash.py``) an ``fc`` from
the target's hidden states at ``len(target_layer_ids)`` layers to its hidden size
(replicated on every GPU), a mask embedding and a hidden norm; EAGLE-3 an ``fc`` from three
of the target's hidden states. DFlash's attention is non-causal, so its KV layers are a spec
of their own, never grouped with the target's (``FullAttentionSpec.non_causal``).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from benchlib.memory._arch import ModelArch
from benchlib.memory._kv import KVLayout, kv_layout, with_draft
from benchlib.memory._weights import WeightPlan, weight_plan

__all__ = ["aux_hidden_states", "checkpoint_tensor_names", "plan_draft"]

_GIB = 1024**3


def checkpoint_tensor_names(folder: Path) -> set[str] | None:
    """The tensor names a checkpoint folder holds (its safetensors index's ``weight_map``,
    else ``model.safetensors``'s header), or None when it holds no weights."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            names = json.loads(index.read_text()).get("weight_map", {})
        except (OSError, ValueError, AttributeError):
            return None
        return set(names) if isinstance(names, dict) else None
    single = folder / "model.safetensors"
    if not single.is_file():
        return None
    try:
        with single.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
    except (OSError, ValueError, struct.error):
        return None
    return {k for k in header if k != "__metadata__"} if isinstance(header, dict) else None


def _raw(folder: Path) -> dict[str, Any]:
    file = folder / "config.json" if folder.is_dir() else folder
    try:
        raw = json.loads(file.read_text())
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _extra_params(raw: dict[str, Any], draft: ModelArch, target: ModelArch, method: str
                  ) -> tuple[int, str]:
    """Parameters a drafter holds beside its decoder layers (replicated on every GPU)."""
    h, th = draft.hidden_size, int(raw.get("target_hidden_size") or target.hidden_size)
    if method == "dflash":
        dflash: dict[str, Any] = (raw["dflash_config"] if isinstance(raw.get("dflash_config"), dict)
                                  else {})
        layers = dflash.get("target_layer_ids") or dflash.get("layer_ids")
        n = len(layers) if isinstance(layers, list) else draft.num_layers
        return h * n * th + 2 * h, f"DFlash fc ({n} target layers × {th} → {h}), mask " \
            "embedding and hidden norm"
    if method == "eagle3":
        return 3 * th * h, "EAGLE-3 fc (3 target hidden states → hidden)"
    return 0, ""


def aux_hidden_states(folder: Path, method: str | None, target_layers: int) -> int:
    """How many of the target's hidden states an EAGLE-3 or DFlash drafter keeps through the
    target's forward pass (0.26.0 ``gpu_model_runner._get_eagle3_aux_layers_from_config``):
    the draft config's ``eagle_aux_hidden_state_layer_ids``, else a non-empty
    ``eagle_config``'s ids, else DFlash's ``target_layer_ids`` (each + 1), else the model's
    default three (``(2, L // 2, L - 3)``); none for an EAGLE-3 head whose ``eagle_config``
    says ``use_aux_hidden_state: false`` (``llm_base_proposer.py``). Each is a new ``[T, H]``
    tensor (``EagleModelMixin._maybe_add_hidden_state``) live from its layer to the forward's
    end, so those taken before the last layer all stand beside its MLP in the profile run."""
    if method not in ("eagle3", "dflash"):
        return 0
    raw = _raw(folder)
    dflash, eagle = raw.get("dflash_config"), raw.get("eagle_config")
    if method == "eagle3" and isinstance(eagle, dict) and \
            eagle.get("use_aux_hidden_state", True) is False:
        return 0
    ids = raw.get("eagle_aux_hidden_state_layer_ids")
    if not ids:
        if dflash and isinstance(dflash, dict):
            ids = [i + 1 for i in dflash.get("target_layer_ids") or [] if isinstance(i, int)]
        if eagle and isinstance(eagle, dict):
            ids = eagle.get("eagle_aux_hidden_state_layer_ids")
    if not ids or not isinstance(ids, (list, tuple)):
        ids = [2, target_layers // 2, target_layers - 3]
    return sum(1 for i in ids if isinstance(i, int) and i < target_layers)


def plan_draft(weights: WeightPlan, layout: KVLayout, *, target: ModelArch, draft: ModelArch,
               folder: Path, method: str | None, tp: int, weight_dtype: str,
               kv_cache_dtype: str, block_size: int) -> tuple[WeightPlan, KVLayout]:
    """The target's weights and KV layout with the drafter's added, vLLM's way (the module's
    docstring): its layers at the target's ``tp``, what it shares with the target left out."""
    dw = weight_plan(draft, tp=tp, weight_dtype=weight_dtype)
    notes: list[str] = []
    per_gpu = float(dw.per_gpu_bytes)
    total = float(dw.total_bytes)
    names = checkpoint_tensor_names(folder if folder.is_dir() else folder.parent)
    if method != "draft":
        for role, key in (("embed", "embed_tokens"), ("lm_head", "lm_head")):
            nbytes = dw.bytes_by_role.get(role, 0)
            if not nbytes:
                continue
            if names is not None and any(key in n for n in names):
                notes.append(f"the drafter's checkpoint has its own {key}: counted "
                             "(vLLM shares it only if identical to the target's)")
                continue
            per_gpu -= nbytes / tp
            total -= nbytes
            notes.append(f"the drafter shares the target's {key} ({nbytes / _GIB:.2f} GiB not "
                         "loaded twice)")
    extra, what = _extra_params(_raw(folder), draft, target, method or "")
    if extra:
        per_gpu += 2 * extra
        total += 2 * extra
        notes.append(f"{what}: {extra / 1e6:.0f} M parameters")
    if method == "dflash":
        kv_proj = 2 * 2 * draft.num_layers * draft.num_kv_heads * draft.head_dim * draft.hidden_size
        notes.append(f"with real weights DFlash also copies its KV projections into one fused "
                     f"buffer ({kv_proj / _GIB:.2f} GiB, skipped under --load-format dummy): "
                     "not counted")
    merged = weights.model_copy(update={
        "total_bytes": weights.total_bytes + int(total),
        "per_gpu_bytes": weights.per_gpu_bytes + int(per_gpu),
        "notes": [*weights.notes, f"the drafter's {per_gpu / _GIB:.2f} GiB per GPU loads with "
                  "the target's ('Model loading took' counts both)", *notes]})
    dlayout = kv_layout(draft, tp=tp, kv_cache_dtype=kv_cache_dtype, block_size=block_size)
    return merged, with_draft(layout, dlayout, non_causal=method == "dflash")
