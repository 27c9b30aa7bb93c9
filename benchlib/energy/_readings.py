"""What an energy reader gives: the devices it reads, and one :class:`Reading` per device at
each :class:`Sample`.

The energy is a counter's raw value (NVML's total-energy counter in millijoules since the
driver loaded, RAPL's ``energy_uj`` in microjoules), never a value converted or differenced
by the reader: the exact arithmetic (units, wrap-around) is :mod:`benchlib.energy._core`'s,
so it is tested once, on synthetic readings, for every reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["Device", "EnergyReader", "PowerSource", "Reading", "Sample", "Source"]

#: where a device's power readings come from: NVML's instantaneous power field, NVML's
#: power usage (a 1 s average on Ampere and newer GPUs but GA100, instantaneous before), or
#: none (RAPL: power only as the counter's increase over one sampling interval)
PowerSource = Literal["instant", "power_usage", "none"]
Source = Literal["nvml", "rapl"]


@dataclass(frozen=True, slots=True)
class Device:
    """One device a reader reads: a GPU, or a RAPL domain (a CPU package, its DRAM)."""

    name: str
    #: joules per count of the energy counter (NVML: 1e-3, RAPL: 1e-6)
    counter_unit_j: float
    #: the counter starts again from 0 after this value (RAPL's ``max_energy_range_uj``);
    #: None: it does not wrap (NVML's is 64 bits of millijoules)
    counter_wrap: int | None = None
    power_source: PowerSource = "none"


@dataclass(frozen=True, slots=True)
class Reading:
    """One device's values at one sample; None where the device did not give one."""

    counter: int | None = None
    power_w: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    #: NVML's clock event (throttle) reasons active now, by name; empty: none (or RAPL)
    throttle: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Sample:
    """Every device's reading at one instant (``time.perf_counter`` seconds: the clock of a
    measurement's ``start_times``)."""

    t_s: float
    readings: tuple[Reading, ...]


class EnergyReader(Protocol):
    """A source of samples: :meth:`read` is called from the sampler's thread, one call per
    sample; a reader failing on one device gives that device an empty :class:`Reading`."""

    @property
    def source(self) -> Source: ...

    @property
    def devices(self) -> tuple[Device, ...]: ...

    def read(self) -> tuple[Reading, ...]: ...

    def close(self) -> None: ...
