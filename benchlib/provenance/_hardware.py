"""The machine a number came from: GPUs through NVML when present, CPU, memory, OS, kernel.

NVML (``nvidia-ml-py``) gives what seed write-ups had to explain in prose: the exact GPU, its
memory, the driver and CUDA versions, clocks, the power limit in force, and the PCIe link.
Without a driver (CPU machines, CI) the GPU list is empty and ``nvml_error`` says why; a GPU
NVML fails on is left out of the list and named in ``nvml_error``, the others still recorded.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from pydantic import BaseModel

__all__ = ["CPUInfo", "GPUInfo", "HardwareInfo", "collect_hardware"]


class GPUInfo(BaseModel):
    index: int
    name: str
    uuid: str | None = None
    memory_total_gib: float
    sm_clock_max_mhz: int | None = None
    mem_clock_max_mhz: int | None = None
    power_limit_w: float | None = None
    power_default_limit_w: float | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None


class CPUInfo(BaseModel):
    model: str
    logical_cores: int
    memory_total_gib: float


class HardwareInfo(BaseModel):
    gpus: list[GPUInfo]
    gpu_count: int
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    nvml_error: str | None = None
    cpu: CPUInfo
    os: str
    kernel: str
    machine: str


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 2)
    except OSError:
        pass
    return 0.0


def _try(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # NVML raises its own error types per unsupported query
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def _gpu(nvml: Any, index: int) -> GPUInfo:
    """One GPU's record. Its handle, memory and name are required (raise if NVML cannot give
    them); every other field is ``None`` where this GPU or driver does not support the query."""
    h = nvml.nvmlDeviceGetHandleByIndex(index)
    mem = nvml.nvmlDeviceGetMemoryInfo(h)
    name = _text(nvml.nvmlDeviceGetName(h)) or "?"
    limit = _try(nvml.nvmlDeviceGetEnforcedPowerLimit, h)
    default = _try(nvml.nvmlDeviceGetPowerManagementDefaultLimit, h)
    return GPUInfo(
        index=index, name=name, uuid=_text(_try(nvml.nvmlDeviceGetUUID, h)),
        memory_total_gib=round(mem.total / 2**30, 2),
        sm_clock_max_mhz=_try(nvml.nvmlDeviceGetMaxClockInfo, h, nvml.NVML_CLOCK_SM),
        mem_clock_max_mhz=_try(nvml.nvmlDeviceGetMaxClockInfo, h, nvml.NVML_CLOCK_MEM),
        power_limit_w=limit / 1000 if limit else None,
        power_default_limit_w=default / 1000 if default else None,
        pcie_gen=_try(nvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
        pcie_width=_try(nvml.nvmlDeviceGetCurrPcieLinkWidth, h),
        pcie_gen_max=_try(nvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
        pcie_width_max=_try(nvml.nvmlDeviceGetMaxPcieLinkWidth, h))


def _nvml() -> tuple[list[GPUInfo], str | None, str | None, str | None]:
    """GPUs, driver version, CUDA driver version, and what went wrong (``None``: nothing).

    A GPU NVML fails on (fallen off the bus, Xid) is left out and named in the error; the
    others are still recorded, so one bad GPU neither hides the rest nor takes the run down.
    """
    try:
        import pynvml
    except ImportError:
        return [], None, None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return [], None, None, f"NVML unavailable: {exc}"
    try:
        driver = _text(_try(pynvml.nvmlSystemGetDriverVersion))
        cuda = _try(pynvml.nvmlSystemGetCudaDriverVersion)
        cuda_text = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
        try:
            count = pynvml.nvmlDeviceGetCount()
        except Exception as exc:
            return [], driver, cuda_text, f"NVML could not count GPUs: {exc}"
        gpus: list[GPUInfo] = []
        errors: list[str] = []
        for i in range(count):
            try:
                gpus.append(_gpu(pynvml, i))
            except Exception as exc:
                errors.append(f"NVML failed on GPU {i}: {exc}")
        return gpus, driver, cuda_text, "; ".join(errors) or None
    finally:
        _try(pynvml.nvmlShutdown)


def collect_hardware() -> HardwareInfo:
    """Read the hardware now; never raises."""
    gpus, driver, cuda, err = _nvml()
    uname = platform.uname()
    return HardwareInfo(
        gpus=gpus, gpu_count=len(gpus), driver_version=driver, cuda_driver_version=cuda,
        nvml_error=err,
        cpu=CPUInfo(model=_cpu_model(), logical_cores=os.cpu_count() or 0,
                    memory_total_gib=_memory_gib()),
        os=platform.platform(), kernel=uname.release, machine=uname.machine)
