"""The machine a number came from: GPUs through NVML when present, CPU, memory, OS, kernel.

NVML (``nvidia-ml-py``) gives what seed write-ups had to explain in prose: the exact GPU, its
memory, the driver and CUDA versions, clocks (the maxima, the application clocks and the
clocks now, with the reasons NVML gives for holding them down), the power limit in force and
the draw now, persistence mode, ECC, MIG, the temperature, and the PCIe link.
Without a driver (CPU machines, CI) the GPU list is empty and ``nvml_error`` says why; a GPU
NVML fails on is left out of the list and named in ``nvml_error``, the others still recorded.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from pydantic import BaseModel

from benchlib.energy import clock_event_names

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
    #: the clocks at the moment of the capture (an idle GPU parks them low)
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    graphics_clock_mhz: int | None = None
    #: the application clocks (what a kernel runs at unless power or heat hold it down)
    app_sm_clock_mhz: int | None = None
    app_mem_clock_mhz: int | None = None
    #: why the clocks are below the application clocks now (NVML's clock event reasons)
    clock_event_reasons: list[str] | None = None
    power_draw_w: float | None = None
    temperature_c: int | None = None
    persistence_mode: bool | None = None
    #: current modes (a pending change shows only after a reset)
    ecc_enabled: bool | None = None
    mig_enabled: bool | None = None


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


def _clock_events(nvml: Any, h: Any) -> list[str] | None:
    mask = _try(getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None), h)
    if mask is None:  # bindings before the rename
        mask = _try(getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None), h)
    if not isinstance(mask, int):
        return None
    return list(clock_event_names(mask))


def _current_mode(nvml: Any, fn: str, h: Any) -> bool | None:
    """The current half of NVML's ``[current, pending]`` mode pairs (ECC, MIG)."""
    mode = _try(getattr(nvml, fn, None), h)
    if isinstance(mode, list | tuple) and mode:
        mode = mode[0]
    return bool(mode) if isinstance(mode, int) else None


def _gpu(nvml: Any, index: int) -> GPUInfo:
    """One GPU's record. Its handle, memory and name are required (raise if NVML cannot give
    them); every other field is ``None`` where this GPU or driver does not support the query."""
    h = nvml.nvmlDeviceGetHandleByIndex(index)
    mem = nvml.nvmlDeviceGetMemoryInfo(h)
    name = _text(nvml.nvmlDeviceGetName(h)) or "?"
    limit = _try(nvml.nvmlDeviceGetEnforcedPowerLimit, h)
    default = _try(nvml.nvmlDeviceGetPowerManagementDefaultLimit, h)
    draw = _try(getattr(nvml, "nvmlDeviceGetPowerUsage", None), h)
    persistence = _try(getattr(nvml, "nvmlDeviceGetPersistenceMode", None), h)
    clock = getattr(nvml, "nvmlDeviceGetClockInfo", None)
    app_clock = getattr(nvml, "nvmlDeviceGetApplicationsClock", None)
    sm, memory = nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_MEM
    graphics = getattr(nvml, "NVML_CLOCK_GRAPHICS", 0)
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
        pcie_width_max=_try(nvml.nvmlDeviceGetMaxPcieLinkWidth, h),
        sm_clock_mhz=_try(clock, h, sm), mem_clock_mhz=_try(clock, h, memory),
        graphics_clock_mhz=_try(clock, h, graphics),
        app_sm_clock_mhz=_try(app_clock, h, sm), app_mem_clock_mhz=_try(app_clock, h, memory),
        clock_event_reasons=_clock_events(nvml, h),
        power_draw_w=draw / 1000 if isinstance(draw, int) else None,
        temperature_c=_try(getattr(nvml, "nvmlDeviceGetTemperature", None), h,
                           getattr(nvml, "NVML_TEMPERATURE_GPU", 0)),
        persistence_mode=bool(persistence) if isinstance(persistence, int) else None,
        ecc_enabled=_current_mode(nvml, "nvmlDeviceGetEccMode", h),
        mig_enabled=_current_mode(nvml, "nvmlDeviceGetMigMode", h))


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
