"""GPUs through NVML (``nvidia-ml-py``): the total-energy counter, instantaneous power, the
SM and memory clocks and the clock event (throttle) reasons of each GPU the engine uses.

Power for the peak is NVML's instantaneous field (``NVML_FI_DEV_POWER_INSTANT``) where the
driver has it: ``nvmlDeviceGetPowerUsage`` is a 1 s average on Ampere and newer GPUs but
GA100 (on an H200 it took about a second to climb from 128 W to 695 W under a matmul, where
the instantaneous field read 923 W at once), so it would smooth the peak; without the field
the reader falls back to it and says so (``power_source``). A GPU without the energy counter
(before Volta) gives no counter, and its energy is integrated from power.

One sample costs five NVML calls per GPU, 2–6 ms on an H200 (measured), outside the GIL
(ctypes releases it), in the sampler's own thread. On that H200 a 4 s matmul load read
2,665 J by the counter (bounds 2,602–2,720 J) where the instantaneous power integrated gave
2,697 J (``tests/gpu/test_energy.py`` holds the two together on any GPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchlib.energy._readings import Device, PowerSource, Reading, Source

__all__ = ["CLOCK_EVENTS", "NvmlReader", "clock_event_names"]

#: NVML's clock event (throttle) reason bits, as ``nvmlClocksEventReason*`` names them
CLOCK_EVENTS = ((0x1, "gpu_idle"), (0x2, "applications_clocks_setting"),
                (0x4, "sw_power_cap"), (0x8, "hw_slowdown"), (0x10, "sync_boost"),
                (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
                (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting"))
_INSTANT = 186  # NVML_FI_DEV_POWER_INSTANT, in bindings that lack the name


def clock_event_names(mask: int) -> tuple[str, ...]:
    """The reasons set in NVML's clock event mask, by name."""
    return tuple(name for bit, name in CLOCK_EVENTS if mask & bit)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlReader:
    """Reads the GPUs ``gpus`` names (NVML indices, or UUIDs as ``CUDA_VISIBLE_DEVICES``
    may hold them); None: every GPU NVML sees. Raises ``RuntimeError`` saying why when NVML
    cannot be started or names no GPU; :meth:`close` shuts NVML down again."""

    source: Source = "nvml"

    def __init__(self, gpus: Sequence[int | str] | None = None, nvml: Any = None) -> None:
        if nvml is None:
            try:
                import pynvml
            except ImportError:
                raise RuntimeError("nvidia-ml-py is not installed") from None
            nvml = pynvml
        self._nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as exc:
            raise RuntimeError(f"NVML unavailable: {exc}") from None
        try:
            wanted = list(range(nvml.nvmlDeviceGetCount())) if gpus is None else list(gpus)
            if not wanted:
                raise RuntimeError("NVML sees no GPU" if gpus is None else "no GPU to read "
                                   "(CUDA_VISIBLE_DEVICES names none)")
            self._handles = [self._handle(g) for g in wanted]
            self._instant = [self._has_instant(h) for h in self._handles]
            self._counter = [self._try(nvml.nvmlDeviceGetTotalEnergyConsumption, h)
                             is not None for h in self._handles]
            self._devices = tuple(self._device(g, h, instant) for g, h, instant in
                                  zip(wanted, self._handles, self._instant, strict=True))
        except Exception:
            self._try(nvml.nvmlShutdown)
            raise

    def _handle(self, gpu: int | str) -> Any:
        try:
            if isinstance(gpu, str) and gpu.startswith(("GPU-", "MIG-")):
                return self._nvml.nvmlDeviceGetHandleByUUID(gpu)
            return self._nvml.nvmlDeviceGetHandleByIndex(int(gpu))
        except Exception as exc:
            raise RuntimeError(f"NVML has no GPU {gpu}: {exc}") from None

    def _device(self, gpu: int | str, handle: Any, instant: bool) -> Device:
        name = _text(self._try(self._nvml.nvmlDeviceGetName, handle) or "?")
        power: PowerSource = "instant" if instant else (
            "power_usage" if self._try(self._nvml.nvmlDeviceGetPowerUsage, handle) is not None
            else "none")
        return Device(name=f"GPU {gpu} ({name})", counter_unit_j=1e-3, counter_wrap=None,
                      power_source=power)

    @staticmethod
    def _try(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:  # NVML raises its own error type per unsupported query
            return None

    def _instant_w(self, handle: Any) -> float | None:
        field = getattr(self._nvml, "NVML_FI_DEV_POWER_INSTANT", _INSTANT)
        got = self._try(self._nvml.nvmlDeviceGetFieldValues, handle, [field])
        if not got or got[0].nvmlReturn != 0:
            return None
        return float(got[0].value.uiVal) / 1000.0  # milliwatts, as an unsigned int

    def _has_instant(self, handle: Any) -> bool:
        return self._instant_w(handle) is not None

    @property
    def devices(self) -> tuple[Device, ...]:
        return self._devices

    def _reasons(self, handle: Any) -> tuple[str, ...]:
        fn = getattr(self._nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            self._nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        mask = self._try(fn, handle) if fn is not None else None
        return clock_event_names(mask) if isinstance(mask, int) else ()

    def _one(self, k: int, handle: Any) -> Reading:
        nvml = self._nvml
        counter = (self._try(nvml.nvmlDeviceGetTotalEnergyConsumption, handle)
                   if self._counter[k] else None)
        if self._instant[k]:
            power = self._instant_w(handle)
        else:
            usage = self._try(nvml.nvmlDeviceGetPowerUsage, handle)
            power = usage / 1000.0 if isinstance(usage, int) else None
        sm = self._try(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)
        mem = self._try(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_MEM)
        return Reading(counter=counter if isinstance(counter, int) else None, power_w=power,
                       sm_clock_mhz=sm if isinstance(sm, int) else None,
                       mem_clock_mhz=mem if isinstance(mem, int) else None,
                       throttle=self._reasons(handle))

    def read(self) -> tuple[Reading, ...]:
        """Every GPU's reading now; a query a GPU fails leaves that value None."""
        return tuple(self._one(k, h) for k, h in enumerate(self._handles))

    def close(self) -> None:
        self._try(self._nvml.nvmlShutdown)
