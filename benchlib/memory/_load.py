"""Where a model's architecture comes from: a ``config.json`` (or its folder) or a GGUF file.

The one dispatcher between the two readers: :mod:`benchlib.memory._arch` parses a config
dict and :mod:`benchlib.memory._gguf` turns a GGUF header into such a dict, so both readers
sit below this module and neither imports the other's caller.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchlib._exceptions import UsageError
from benchlib.memory._arch import ModelArch
from benchlib.memory._arch_read import arch_from_dict
from benchlib.memory._gguf import load_gguf
from benchlib.memory._quant import read_quantization

__all__ = ["load_model_config"]


def _checkpoint_index(folder: Path) -> dict[str, Any]:
    """``total_size`` / ``total_parameters`` of ``model.safetensors.index.json`` in
    ``folder``, as :class:`ModelArch` fields (empty when there is no readable index)."""
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return {}
    try:
        meta = json.loads(index.read_text()).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return {}
    updates: dict[str, Any] = {}
    if meta.get("total_size"):
        updates["checkpoint_bytes"] = int(meta["total_size"])
    if meta.get("total_parameters"):
        updates["checkpoint_params"] = int(meta["total_parameters"])
    return updates


def load_model_config(path: Path | str) -> ModelArch:
    """Read ``config.json`` (a file, or a model folder holding one) into a :class:`ModelArch`.

    A ``model.safetensors.index.json`` beside it adds the checkpoint's ``total_size`` (and
    ``total_parameters`` where the index has it), so the plan can say which number it used.
    A ``hf_quant_config.json`` beside it (NVIDIA ModelOpt) declares the quantization when
    ``config.json`` does not, as vLLM reads it (:mod:`benchlib.memory._quant`).
    A ``.gguf`` file is read with :func:`benchlib.memory.load_gguf`.
    """
    p = Path(path)
    if p.suffix == ".gguf":
        return load_gguf(p).arch
    file = p / "config.json" if p.is_dir() else p
    if not file.is_file():
        raise UsageError("--model-config", f"{p}: no config.json there")
    try:
        raw = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError("--model-config", f"{file}: not readable JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise UsageError("--model-config", f"{file}: expected a JSON object")
    arch = arch_from_dict(raw, name=str(raw.get("_name_or_path") or file.parent.name),
                          source=str(file))
    updates = _checkpoint_index(file.parent)
    if arch.quantization is None:  # ModelOpt's hf_quant_config.json, as vLLM reads it
        sidecar = read_quantization(raw, file.parent)
        if sidecar is not None:
            updates["quantization"] = sidecar
    return arch.model_copy(update=updates) if updates else arch
