"""Which quantization a checkpoint declares, and which KV cache dtype vLLM gives it, read the
way vLLM 0.26.0 reads them.

Where the declaration lives (``transformers_utils/config.py`` and
``model_arch_config_convertor.py``): ``quantization_config`` in ``config.json`` (a multimodal
wrapper's ``text_config`` too), else its ``compression_config`` (older compressed-tensors),
else NVIDIA ModelOpt's ``hf_quant_config.json`` beside it (ModelOpt 0.29 and before; later
versions write both). A ModelOpt declaration names its producer and nests its fields under
``quantization``; vLLM sets ``quant_method`` from ``quant_algo`` (``FP8``,
``FP8_PER_CHANNEL_PER_TOKEN`` and ``FP8_PB_WO`` → ``modelopt``; ``NVFP4`` →
``modelopt_fp4``) and refuses other algorithms. This module lifts the nested fields to the
top, so the weight scheme (:mod:`benchlib.memory._weights`) reads one flat dict.

The KV cache under ``--kv-cache-dtype auto`` (``utils/torch_utils.py``
``resolve_kv_cache_dtype_string``, ``attention.py``): a ModelOpt checkpoint's
``kv_cache_quant_algo`` / ``kv_cache_scheme`` (FP8 → ``fp8_e4m3``, NVFP4 → ``nvfp4``), a
compressed-tensors checkpoint's ``kv_cache_scheme`` (→ ``fp8``); any other checkpoint keeps
the model dtype. An explicit ``--kv-cache-dtype`` always wins.

``--quantization`` (:func:`check_quantization`): vLLM refuses a method that differs from the
checkpoint's (``config/model.py`` ``_verify_quantization``), accepting the kernel variants it
would pick itself (``awq_marlin`` for ``awq`` …); on an unquantized checkpoint ``fp8``
quantizes the weights at load (one byte a weight, per-tensor scales) and ``bitsandbytes``
loads them in 4 bits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchlib._exceptions import UsageError

__all__ = ["ONLINE_QUANTIZATION", "check_quantization", "checkpoint_kv_dtype",
           "read_quantization"]

#: ModelOpt algorithms vLLM 0.26.0 maps to a method (model_arch_config_convertor.py)
_MODELOPT_ALGOS = {"FP8": "modelopt", "FP8_PER_CHANNEL_PER_TOKEN": "modelopt",
                   "FP8_PB_WO": "modelopt", "NVFP4": "modelopt_fp4"}
#: ``--quantization`` values that quantize an unquantized checkpoint at load, and the
#: ``--weight-dtype`` that sizes them
ONLINE_QUANTIZATION = {"fp8": "fp8", "bitsandbytes": "bnb-nf4"}
#: methods vLLM accepts for a checkpoint of another name (its own override choices)
_SAME = {"awq": {"awq", "awq_marlin", "auto_awq"}, "gptq": {"gptq", "gptq_marlin", "auto_gptq"},
         "modelopt": {"modelopt"}, "modelopt_fp4": {"modelopt_fp4"},
         "compressed-tensors": {"compressed-tensors"}, "fp8": {"fp8"},
         "mxfp4": {"mxfp4", "gpt_oss_mxfp4"}, "bitsandbytes": {"bitsandbytes"},
         "fbgemm_fp8": {"fbgemm_fp8"}}


def _normalize(q: dict[str, Any], source: str) -> dict[str, Any]:
    """``q`` as vLLM normalizes it: a ModelOpt declaration's nested fields lifted, its
    ``quant_method`` set from ``quant_algo``; ``compressed_tensors`` spelled with a dash."""
    out = dict(q)
    inner = q.get("quantization")
    producer = q["producer"] if isinstance(q.get("producer"), dict) else {}
    legacy = isinstance(inner, dict) and "modelopt_quant_config" in inner
    if isinstance(inner, dict) and (producer.get("name") == "modelopt" or legacy):
        for key, value in inner.items():
            out.setdefault(key, value)
        algo = str(inner.get("quant_algo") or "").upper()
        if algo:
            if algo not in _MODELOPT_ALGOS:
                raise UsageError("--model-config", f"{source}: ModelOpt quant_algo {algo!r}: "
                                 "vLLM 0.26.0 reads " + ", ".join(_MODELOPT_ALGOS))
            out["quant_method"] = _MODELOPT_ALGOS[algo]
    method = str(out.get("quant_method") or "").lower().replace("compressed_tensors",
                                                                 "compressed-tensors")
    out["quant_method"] = method
    return out


def read_quantization(raw: dict[str, Any], folder: Path | None) -> dict[str, Any] | None:
    """The checkpoint's quantization declaration, normalized, or None when it has none:
    ``config.json``'s (or its text config's), else ``hf_quant_config.json`` in ``folder``."""
    text: dict[str, Any] = raw["text_config"] if isinstance(raw.get("text_config"), dict) else {}
    for q in (raw.get("quantization_config"), raw.get("compression_config"),
              text.get("quantization_config")):
        if isinstance(q, dict):
            return _normalize(q, "config.json quantization_config")
    sidecar = folder / "hf_quant_config.json" if folder is not None else None
    if sidecar is None or not sidecar.is_file():
        return None
    try:
        q = json.loads(sidecar.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError("--model-config", f"{sidecar}: not readable JSON ({exc})") from None
    if not isinstance(q, dict):
        raise UsageError("--model-config", f"{sidecar}: expected a JSON object")
    out = _normalize(q, str(sidecar))
    out["declared_in"] = "hf_quant_config.json"
    return out


def checkpoint_kv_dtype(q: dict[str, Any] | None) -> str | None:
    """The KV cache dtype ``--kv-cache-dtype auto`` resolves to for this checkpoint (``fp8``
    or ``nvfp4``), or None when vLLM keeps the model dtype."""
    if not q:
        return None
    method = str(q.get("quant_method", ""))
    if method.startswith("modelopt"):
        kv = q.get("kv_cache_scheme") or q.get("kv_cache_quant_algo")
        if isinstance(kv, dict):
            if kv.get("num_bits") == 8 and kv.get("type") == "float" and not kv.get("dynamic"):
                return "fp8"
            if kv.get("num_bits") == 4 and kv.get("type") == "float":
                return "nvfp4"
            return None
        if isinstance(kv, str):
            return {"fp8": "fp8", "nvfp4": "nvfp4"}.get(kv.lower())
        return None
    if method == "compressed-tensors" and isinstance(q.get("kv_cache_scheme"), dict):
        return "fp8"
    return None


def check_quantization(q: dict[str, Any] | None, flag: str | None) -> str | None:
    """The ``--weight-dtype`` that ``--quantization flag`` implies (None: the checkpoint's
    own), or a :class:`UsageError` where vLLM would refuse the pair."""
    if flag is None:
        return None
    method = str((q or {}).get("quant_method") or "")
    if not method:
        if flag in ONLINE_QUANTIZATION:
            return ONLINE_QUANTIZATION[flag]
        raise UsageError("--quantization", f"{flag!r} needs a checkpoint quantized so; this "
                         "one is not (vLLM quantizes at load only with "
                         + " or ".join(ONLINE_QUANTIZATION) + ")")
    if flag not in _SAME.get(method, {method}):
        raise UsageError("--quantization", f"{flag!r} does not match the checkpoint's "
                         f"quant_method {method!r}: vLLM refuses to start")
    return None
