"""Which reader a run gets: NVML for a GPU run, RAPL for a CPU run, or the reason neither
can be read — and which GPUs an engine uses, from ``CUDA_VISIBLE_DEVICES`` and the GPU count
the recipe knows.

A run is a GPU run unless it says it uses none (``want="cpu"``: a recipe whose
``hardware.gpu_count`` is 0); a run that does not say (``"any"``) gets NVML where it sees a
GPU, else RAPL. A GPU run never falls back to RAPL: the CPUs' energy is not the GPUs'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchlib.energy._nvml import NvmlReader
from benchlib.energy._rapl import POWERCAP, RaplReader
from benchlib.energy._readings import EnergyReader

__all__ = ["GpuChoice", "Want", "choose_gpus", "open_reader"]

Want = Literal["gpu", "cpu", "any"]


@dataclass(frozen=True)
class GpuChoice:
    """The GPUs to read (None: every GPU NVML sees), and what the choice assumed."""

    gpus: list[int | str] | None
    flags: list[str] = field(default_factory=list)


def _visible(value: str) -> list[int | str]:
    out: list[int | str] = []
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        if item.lstrip("-").isdigit():
            if int(item) < 0:
                break  # CUDA stops at the first invalid index
            out.append(int(item))
        else:
            out.append(item)
    return out


def choose_gpus(env: Mapping[str, str], count: int | None) -> GpuChoice:
    """The GPUs an engine started with ``env`` uses: ``CUDA_VISIBLE_DEVICES`` (indices or
    UUIDs), the first ``count`` of them when the recipe knows how many it uses (tp × pp, or
    ``hardware.gpu_count``); neither: every GPU NVML sees."""
    flags = []
    visible = _visible(env["CUDA_VISIBLE_DEVICES"]) if "CUDA_VISIBLE_DEVICES" in env else None
    if visible is not None and any(isinstance(v, int) for v in visible) \
            and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        flags.append("CUDA_VISIBLE_DEVICES indices are read as NVML's (PCI bus order); CUDA "
                     "orders fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID: on a machine "
                     "of mixed GPUs the GPUs read may not be the engine's")
    if count is None:
        if visible is None:
            flags.append("the engine's GPU count is not known (hardware.gpu_count, "
                         "engine.parallel): every GPU NVML sees is summed")
        return GpuChoice(visible, flags)
    chosen = (visible or list(range(count)))[:count]
    if len(chosen) < count:
        flags.append(f"the recipe says {count} GPUs, CUDA_VISIBLE_DEVICES names "
                     f"{len(chosen)}: those are summed")
    return GpuChoice(chosen, flags)


def open_reader(want: Want, gpus: Sequence[int | str] | None = None, *,
                powercap: Path = POWERCAP, nvml: Any = None) -> EnergyReader | str:
    """A started reader for ``want``, or why there is none (each source's reason)."""
    reasons = []
    if want != "cpu":
        try:
            return NvmlReader(gpus, nvml=nvml)
        except RuntimeError as exc:
            if want == "gpu":
                return f"a GPU run, and NVML cannot read its GPUs: {exc}"
            reasons.append(str(exc))
    try:
        return RaplReader(powercap)
    except RuntimeError as exc:
        reasons.append(str(exc))
    return "; ".join(reasons)
