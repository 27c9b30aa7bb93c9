"""Weight bytes by dtype and quantization format, in total and per GPU under tensor parallelism.

The format comes from the checkpoint's declaration as vLLM reads it (``quantization_config``,
or ModelOpt's ``hf_quant_config.json``: :mod:`benchlib.memory._quant`) or ``--weight-dtype``:
FP8 (per-block, per-channel or per-tensor scales; ModelOpt's and fbgemm's too),
compressed-tensors (pack-quantized INT4 with group scales,
float-quantized FP8), AWQ and GPTQ (group size, zero points), NVFP4 (ModelOpt), MXFP4 (gpt-oss:
experts only) and bitsandbytes. Scales are counted: they are what separates "4 bits" from the
4.25–4.6 bits a checkpoint really holds. Which roles stay in high precision (embeddings,
lm_head, norms, routers, and whatever the config's ignore list names) is part of the answer.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from benchlib._exceptions import UsageError
from benchlib.memory._arch import ModelArch
from benchlib.memory._params import ParamBreakdown, count_params

__all__ = ["WEIGHT_DTYPES", "WeightPlan", "weight_plan"]

#: accepted by ``--weight-dtype``
WEIGHT_DTYPES = ("auto", "bf16", "fp16", "fp32", "fp8", "int8", "int4", "awq", "gptq", "nvfp4",
                 "mxfp4", "bnb-nf4", "bnb-int8")

_LINEAR = ("attention", "linear_attn", "mlp", "experts", "shared_experts")
_GIB = 1024**3


class WeightPlan(BaseModel):
    """Weight bytes per role, in total and on each GPU, and how they were derived."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scheme: str
    bytes_per_param: dict[str, float]
    bytes_by_role: dict[str, int]
    total_bytes: int
    per_gpu_bytes: int
    #: bytes of the routed experts on one GPU (what decode reads a fraction of)
    experts_per_gpu_bytes: int
    high_precision: list[str]
    source: str
    notes: list[str]

    @property
    def total_gib(self) -> float:
        return self.total_bytes / _GIB

    @property
    def per_gpu_gib(self) -> float:
        return self.per_gpu_bytes / _GIB


def _role_of(pattern: str) -> set[str]:
    """Roles a module-name pattern from an ignore list covers (``re:`` prefixes allowed)."""
    p = pattern.removeprefix("re:").lower()
    roles: set[str] = set()
    if "lm_head" in p:
        roles.add("lm_head")
    if "embed" in p:
        roles.add("embed")
    if "shared_expert" in p:
        roles.add("shared_experts")
    elif re.search(r"(self_attn|attention|\.attn)", p):
        roles.update({"attention", "linear_attn"})
    if "router" in p or re.search(r"mlp\.gate($|\$|[^_a-z])", p):
        roles.add("router")
    if re.search(r"layers\.0\.mlp", p) or "dense" in p:
        roles.add("mlp")
    return roles


def _ignored(q: dict[str, Any]) -> set[str]:
    names: list[str] = []
    for key in ("ignore", "modules_to_not_convert", "ignored_layers", "exclude_modules",
                "llm_int8_skip_modules"):
        val = q.get(key)
        if isinstance(val, list):
            names.extend(str(v) for v in val)
    roles: set[str] = set()
    for n in names:
        roles |= _role_of(n)
    return roles


def _group_bytes(bits: float, group: int, scale_bytes: float, zero: bool) -> float:
    per = bits / 8 + scale_bytes / group
    return per + (bits / 8) / group if zero else per


def _scheme(a: ModelArch, override: str) -> tuple[str, float, set[str], set[str], list[str]]:
    """(name, bytes per quantized param, quantized roles, ignored roles, notes)."""
    notes: list[str] = []
    q = a.quantization or {}
    method = str(q.get("quant_method", "")).lower()
    if override != "auto":
        targets = {"experts"} if override == "mxfp4" else set(_LINEAR)
        per = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "fp8": 1.0 + 4 / 128**2, "int8": 1.0,
               "int4": _group_bytes(4, 128, 2, False), "awq": _group_bytes(4, 128, 2, True),
               "gptq": _group_bytes(4, 128, 2, True), "nvfp4": 0.5 + 1 / 16,
               "mxfp4": 0.5 + 1 / 32, "bnb-nf4": 0.5 + 1 / 64 + 4 / (64 * 256),
               "bnb-int8": 1.0}[override]
        if override in ("bf16", "fp16", "fp32"):
            return override, per, set(), set(), [f"--weight-dtype {override}: every tensor"]
        return override, per, targets, set(), [f"--weight-dtype {override} overrides the "
                                              "checkpoint's quantization_config"]
    if not method:
        dtype = "fp32 loaded as bf16" if a.torch_dtype == "float32" else a.torch_dtype
        return dtype, 2.0, set(), set(), notes
    ignored = _ignored(q)
    targets = set(_LINEAR)
    if method == "fp8":
        block = q.get("weight_block_size")
        if block:
            per = 1.0 + 4 / (int(block[0]) * int(block[1]))
            name = f"fp8 (block {block[0]}x{block[1]} scales)"
        else:
            per, name = 1.0, "fp8 (per-tensor scales)"
    elif method == "compressed-tensors":
        groups = q.get("config_groups") or {}
        g0: dict[str, Any] = next(iter(groups.values()), {}) if groups else {}
        w = g0.get("weights") or {}
        bits = int(w.get("num_bits", 8))
        kind = str(w.get("type", "int"))
        strategy = str(w.get("strategy", "channel"))
        tgt = [str(t).lower() for t in g0.get("targets", ["Linear"])]
        if any("expert" in t for t in tgt):
            targets = {"experts"} | ({"shared_experts"} if any("shared" in t for t in tgt)
                                     else set())
        if bits == 4 and kind == "float":
            per, name = 0.5 + 1 / int(w.get("group_size") or 16), "nvfp4 (compressed-tensors)"
        elif bits == 4:
            gs = int(w.get("group_size") or 128)
            per = _group_bytes(4, gs, 2, not bool(w.get("symmetric", True)))
            name = f"int4 pack-quantized (group {gs})" if strategy == "group" else "int4"
        elif kind == "float":
            per, name = 1.0, f"fp8 (compressed-tensors, {strategy} scales)"
        else:
            per, name = 1.0, f"int{bits} (compressed-tensors)"
    elif method in ("awq", "gptq", "awq_marlin", "gptq_marlin", "auto-round"):
        bits = int(q.get("bits", q.get("w_bit", 4)))
        gs = int(q.get("group_size", q.get("q_group_size", 128)))
        gs = gs if gs > 0 else (a.hidden_size)
        # GPTQ stores packed zero points even when symmetric; AWQ unless zero_point is off
        zero = bool(q.get("zero_point", True)) if "awq" in method else True
        per = _group_bytes(bits, gs, 2, zero)
        name = f"{method.split('_')[0]} int{bits} (group {gs})"
    elif method in ("modelopt", "modelopt_fp4", "nvfp4"):
        per, name = _modelopt(q)
    elif method == "fbgemm_fp8":
        per, name = 1.0, "fp8 (fbgemm, per-channel scales)"
    elif method == "mxfp4":
        per, name, targets = 0.5 + 1 / 32, "mxfp4 experts, rest bf16", {"experts"}
    elif method == "bitsandbytes":
        if q.get("load_in_8bit"):
            per, name = 1.0, "bitsandbytes int8"
        else:
            dq = bool(q.get("bnb_4bit_use_double_quant", False))
            per = 0.5 + (1 / 64 + 4 / (64 * 256) if dq else 4 / 64)
            name = "bitsandbytes nf4" + (" (double quant)" if dq else "")
    else:
        notes.append(f"quant_method {method!r} is unknown here: weights counted as bf16")
        return a.torch_dtype, 2.0, set(), set(), notes
    return name, per, targets - ignored, ignored, notes


def _modelopt(q: dict[str, Any]) -> tuple[float, str]:
    """A ModelOpt format's bytes per weight (``modelopt.py``): FP8 one byte with one fp32
    scale per tensor (per channel for ``FP8_PER_CHANNEL_PER_TOKEN``, per 128×128 block for
    the weight-only ``FP8_PB_WO``); NVFP4 half a byte plus an FP8 scale per ``group_size``
    (16) and one fp32 scale per tensor."""
    algo = str(q.get("quant_algo") or "").upper()
    where = " from hf_quant_config.json" if q.get("declared_in") else ""
    if algo == "FP8_PB_WO":
        return 1.0 + 4 / 128**2, f"fp8 (ModelOpt{where}, 128x128 block scales)"
    if "FP8" in algo:
        scales = "per-channel" if "PER_CHANNEL" in algo else "per-tensor"
        return 1.0, f"fp8 (ModelOpt{where}, {scales} scales)"
    group = int(q.get("group_size") or 16)
    return 0.5 + 1 / group, f"nvfp4 (ModelOpt{where}, group {group})"


def _mxfp4_padding(a: ModelArch, tp: int) -> float:
    """vLLM's MXFP4 MoE kernels pad hidden to a multiple of 256 and each rank's expert
    intermediate slice to a multiple of 64 (gpt-oss: 2880 → 3072; 720 → 768 at TP 4)."""
    if a.moe is None:
        return 1.0
    h = a.hidden_size
    inter = a.moe.expert_intermediate_size / tp
    return (math.ceil(h / 256) * 256 / h) * (math.ceil(inter / 64) * 64 / inter)


def _shard(role: str, nbytes: float, a: ModelArch, tp: int, per: dict[str, float]) -> float:
    """Bytes of one role on one rank: vocab-parallel embeddings, sharded linears, replicated
    routers and norms; MLA's down-projections (q_a, kv_a) are replicated on every rank."""
    if role in ("router", "norm") or tp == 1:
        return nbytes
    if role == "attention" and a.mla is not None:
        m = a.mla
        rep = a.hidden_size * ((m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim)
        rep_bytes = rep * per["attention"] * a.count("mla")
        return rep_bytes + (nbytes - rep_bytes) / tp
    if role == "attention" and tp > a.num_kv_heads:
        h, d = a.hidden_size, a.head_dim
        kv = 2 * h * d * a.num_kv_heads * per["attention"] * (a.count("full") + a.count("sliding"))
        rep = tp // a.num_kv_heads
        return (nbytes - kv) / tp + kv * rep / tp
    return nbytes / tp


def weight_plan(a: ModelArch, *, tp: int = 1, weight_dtype: str = "auto",
                params: ParamBreakdown | None = None) -> WeightPlan:
    """Weight bytes for ``a`` at tensor-parallel size ``tp``, from its quantization config or
    ``weight_dtype`` (one of :data:`WEIGHT_DTYPES`)."""
    if weight_dtype not in WEIGHT_DTYPES:
        raise UsageError("--weight-dtype", f"{weight_dtype!r}: use one of "
                         + ", ".join(WEIGHT_DTYPES))
    params = params or count_params(a)
    q = a.quantization or {}
    if q.get("quant_method") == "gguf" and a.checkpoint_bytes and weight_dtype == "auto":
        return _gguf_plan(a, params, tp)
    name, qbytes, quantized, ignored, notes = _scheme(a, weight_dtype)
    base = 4.0 if weight_dtype == "fp32" else 2.0
    per = {r: (qbytes if r in quantized else base) for r in params.by_role}
    if weight_dtype in ("bf16", "fp16", "fp32"):
        per = dict.fromkeys(params.by_role, qbytes)
    by_role = {r: int(n * per[r]) for r, n in params.by_role.items()}
    if "mxfp4" in name and a.moe is not None:
        pad = _mxfp4_padding(a, tp)
        if pad > 1.0:
            notes.append(f"vLLM pads MXFP4 expert matrices by {100 * (pad - 1):.1f}% at TP {tp}")
    else:
        pad = 1.0
    per_gpu = {r: _shard(r, b, a, tp, per) for r, b in by_role.items()}
    per_gpu["experts"] *= pad
    high = sorted(r for r in params.by_role if params.by_role[r] and per[r] >= 2.0)
    present = {r for r, n in params.by_role.items() if n}
    if ignored & present:
        notes.append("kept in high precision by the config's ignore list: "
                     + ", ".join(sorted(ignored & present)))
    total = sum(by_role.values())
    source = "architecture × " + name
    if a.checkpoint_bytes:
        diff = (total - a.checkpoint_bytes) / a.checkpoint_bytes
        notes.append(f"checkpoint index says {a.checkpoint_bytes / _GIB:.2f} GiB; the "
                     f"architecture estimate is {total / _GIB:.2f} GiB ({100 * diff:+.1f}%)")
    return WeightPlan(scheme=name, bytes_per_param=per, bytes_by_role=by_role, total_bytes=total,
                      per_gpu_bytes=int(sum(per_gpu.values())),
                      experts_per_gpu_bytes=int(per_gpu["experts"]), high_precision=high,
                      source=source, notes=notes)


def _gguf_plan(a: ModelArch, params: ParamBreakdown, tp: int) -> WeightPlan:
    """A GGUF's bytes are exact in total; roles get shares in proportion to their params."""
    total = int(a.checkpoint_bytes or 0)
    n = max(1, sum(params.by_role.values()))
    by_role = {r: total * c // n for r, c in params.by_role.items()}
    per = {r: total / n for r in params.by_role}
    file_type = str((a.quantization or {}).get("file_type", "?"))
    return WeightPlan(
        scheme=f"gguf {file_type}", bytes_per_param=per, bytes_by_role=by_role,
        total_bytes=total, per_gpu_bytes=total // tp,
        experts_per_gpu_bytes=by_role.get("experts", 0) // tp, high_precision=["norm"],
        source="GGUF tensor bytes", notes=["roles split in proportion to their parameters"])
