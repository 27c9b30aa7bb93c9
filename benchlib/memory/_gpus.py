"""GPU catalogue: memory and HBM/GDDR bandwidth, with where each figure comes from.

``memory_gib`` is what ``torch.cuda.mem_get_info`` reports as total (what vLLM multiplies by
``--gpu-memory-utilization``) where a vLLM log has printed it, otherwise the marketed size in
GB converted to GiB less the ~0.5% the driver reserves. Bandwidth is the vendor's peak; real
decode reaches 70–90% of it, which is why the decode numbers here are floors.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from benchlib._exceptions import UsageError

__all__ = ["GPU", "GPUS", "device_mismatch", "entry_for_device", "find_gpu"]


class GPU(BaseModel):
    """One accelerator model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    memory_gb: float
    memory_gib: float
    bandwidth_gbs: float
    source: str
    aliases: tuple[str, ...] = ()
    #: streaming multiprocessors (AMD: compute units), from the datasheet: vLLM sizes a
    #: persistent sampler buffer by them
    sm_count: int | None = None


def _gib(gb: float) -> float:
    return round(gb * 1e9 / 2**30 * 0.995, 2)


_NV = "NVIDIA datasheet"
GPUS: tuple[GPU, ...] = (
    GPU(name="B200", sm_count=148, memory_gb=192, memory_gib=178.4, bandwidth_gbs=8000,
        source=f"{_NV} (B200 192 GB HBM3e, 8 TB/s); nvidia-smi shows 183,359 MiB, torch "
        "~178.4 GiB",
        aliases=("b200-180gb",)),
    GPU(name="B300", sm_count=148, memory_gb=288, memory_gib=_gib(270), bandwidth_gbs=8000,
        source=f"{_NV} (HGX B300: 288 GB HBM3e, 8 TB/s)"),
    GPU(name="H200", sm_count=132, memory_gb=141, memory_gib=139.8, bandwidth_gbs=4800,
        source=f"{_NV} (H200 SXM 141 GB HBM3e, 4.8 TB/s); nvidia-smi shows 143,771 MiB, "
        "torch ~139.8 GiB", aliases=("h200-sxm",)),
    GPU(name="H100-SXM", sm_count=132, memory_gb=80, memory_gib=79.18, bandwidth_gbs=3350,
        source=f"{_NV} (H100 SXM5 80 GB HBM3, 3.35 TB/s); 79.18 GiB total from vLLM logs",
        aliases=("h100", "h100-80gb", "h100-sxm5")),
    GPU(name="H100-PCIe", sm_count=114, memory_gb=80, memory_gib=79.18, bandwidth_gbs=2000,
        source=f"{_NV} (H100 PCIe 80 GB HBM2e, 2.0 TB/s)", aliases=("h100-pcie-80gb",)),
    GPU(name="H20", sm_count=78, memory_gb=96, memory_gib=_gib(96), bandwidth_gbs=4000,
        source=f"{_NV} (H20: 96 GB HBM3, 4.0 TB/s)"),
    GPU(name="A100-80GB", sm_count=108, memory_gb=80, memory_gib=79.25, bandwidth_gbs=2039,
        source=f"{_NV} (A100 SXM 80 GB HBM2e, 2,039 GB/s); 79.25 GiB total from vLLM logs",
        aliases=("a100", "a100-80", "a100-sxm-80gb")),
    GPU(name="A100-40GB", sm_count=108, memory_gb=40, memory_gib=39.39, bandwidth_gbs=1555,
        source=f"{_NV} (A100 40 GB HBM2, 1,555 GB/s)", aliases=("a100-40",)),
    GPU(name="L40S", sm_count=142, memory_gb=48, memory_gib=44.39, bandwidth_gbs=864,
        source=f"{_NV} (L40S 48 GB GDDR6, 864 GB/s)"),
    GPU(name="L4", sm_count=58, memory_gb=24, memory_gib=22.03, bandwidth_gbs=300,
        source=f"{_NV} (L4 24 GB GDDR6, 300 GB/s)"),
    GPU(name="A10", sm_count=72, memory_gb=24, memory_gib=22.06, bandwidth_gbs=600,
        source=f"{_NV} (A10 24 GB GDDR6, 600 GB/s)"),
    GPU(name="RTX-PRO-6000", sm_count=188, memory_gb=96, memory_gib=95.01, bandwidth_gbs=1792,
        source=f"{_NV} (RTX PRO 6000 Blackwell 96 GB GDDR7, 1,792 GB/s); 95.01 GiB from "
        "a vLLM log", aliases=("rtx-pro-6000-blackwell",)),
    GPU(name="RTX-5090", sm_count=170, memory_gb=32, memory_gib=31.36, bandwidth_gbs=1792,
        source=f"{_NV} (GeForce RTX 5090 32 GB GDDR7, 1,792 GB/s)", aliases=("5090",)),
    GPU(name="RTX-4090", sm_count=128, memory_gb=24, memory_gib=23.53, bandwidth_gbs=1008,
        source=f"{_NV} (GeForce RTX 4090 24 GB GDDR6X, 1,008 GB/s)", aliases=("4090",)),
    GPU(name="RTX-3090", sm_count=82, memory_gb=24, memory_gib=23.58, bandwidth_gbs=936,
        source=f"{_NV} (GeForce RTX 3090 24 GB GDDR6X, 936 GB/s); 23.58 GiB from vLLM logs",
        aliases=("3090",)),
    GPU(name="CMP-170HX", sm_count=70, memory_gb=8, memory_gib=7.79, bandwidth_gbs=1493,
        source="NVIDIA CMP 170HX product brief (8 GB HBM2e, 1,493 GB/s; GA100 mining board)",
        aliases=("cmp170hx",)),
    GPU(name="MI300X", sm_count=304, memory_gb=192, memory_gib=_gib(192), bandwidth_gbs=5300,
        source="AMD Instinct MI300X datasheet (192 GB HBM3, 5.3 TB/s)"),
)


def _norm(s: str) -> str:
    return s.lower().replace(" ", "-").replace("_", "-")


def find_gpu(name: str) -> GPU:
    """Look a GPU up by name or alias, case- and separator-insensitively."""
    key = _norm(name)
    for gpu in GPUS:
        if key == _norm(gpu.name) or key in (_norm(a) for a in gpu.aliases):
            return gpu
    raise UsageError("--gpu", f"unknown GPU {name!r}; known: "
                     + ", ".join(g.name for g in GPUS) + " (or pass --gpu-memory-gib)")


#: how far a device's memory may lie from its catalogue entry's and still be that GPU
MEMORY_TOLERANCE = 0.10


def _tokens(name: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", name.lower()))


def _named(gpu: GPU, words: set[str]) -> int:
    """How many of the device's words the entry's name or best alias takes (0: none of its
    names is wholly among them)."""
    return max((len(t) for n in (gpu.name, *gpu.aliases) if (t := _tokens(n)) <= words),
               default=0)


def entry_for_device(device_name: str, memory_gib: float) -> GPU | None:
    """The catalogue's entry for a device (its NVML name and total memory): the one whose
    name or alias takes the most words of the device's name, its memory within
    :data:`MEMORY_TOLERANCE`; None when none does (a GPU the catalogue lacks)."""
    words = _tokens(device_name)
    scored = [(_named(g, words), g) for g in GPUS
              if abs(memory_gib - g.memory_gib) <= MEMORY_TOLERANCE * g.memory_gib]
    best = max(scored, key=lambda sg: sg[0], default=(0, None))
    return best[1] if best[0] else None


def device_mismatch(gpu: GPU, device_name: str, memory_gib: float) -> str | None:
    """Why the device a run found (its NVML name and total memory) is not ``gpu``, or None.
    The device is the entry whose name or alias takes the most of its words
    (:func:`entry_for_device`: ``NVIDIA H100 PCIe`` is the H100-PCIe though H100-SXM's alias
    ``h100`` is among its words; ``L4`` is not in ``NVIDIA L40S``)."""
    entry = entry_for_device(device_name, memory_gib)
    if entry is not None and entry.name == gpu.name:
        return None
    said = f"{device_name!r}, {memory_gib:.1f} GiB"
    if entry is None:
        return f"{said}, is not in the kit's GPU catalogue"
    return f"{said}, is the {entry.name}"
