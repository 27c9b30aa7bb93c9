"""Energy of a measurement: the devices an engine runs on, read in a thread of their own
around each scenario — GPUs through NVML (the total-energy counter, instantaneous power,
clocks, throttle reasons), CPU packages through RAPL — and turned into joules per output
token and per request, average and peak watts, and the idle draw measured just before.

Pure arithmetic (:func:`energy_figures`, over :class:`Sample` readings) is apart from the
readers (:class:`NvmlReader`, :class:`RaplReader`) and the thread (:class:`EnergySampler`),
so the figures are tested on synthetic readings and the readers on what they read. Where
nothing can be read, the result is an :class:`EnergyResult` with a ``reason`` and every
figure null, never zeros.
"""

from benchlib.energy._core import (
    Bracket,
    Window,
    counter_energy,
    counter_series,
    energy_figures,
    integrated_energy,
    interpolate,
)
from benchlib.energy._nvml import CLOCK_EVENTS, NvmlReader, clock_event_names
from benchlib.energy._open import GpuChoice, Want, choose_gpus, open_reader
from benchlib.energy._rapl import POWERCAP, RaplReader
from benchlib.energy._readings import Device, EnergyReader, PowerSource, Reading, Sample, Source
from benchlib.energy._result import ClockStats, DeviceEnergy, EnergyResult, Method
from benchlib.energy._sampler import EnergySampler

__all__ = [
    "CLOCK_EVENTS",
    "POWERCAP",
    "Bracket",
    "ClockStats",
    "Device",
    "DeviceEnergy",
    "EnergyReader",
    "EnergyResult",
    "EnergySampler",
    "GpuChoice",
    "Method",
    "NvmlReader",
    "PowerSource",
    "RaplReader",
    "Reading",
    "Sample",
    "Source",
    "Want",
    "Window",
    "choose_gpus",
    "clock_event_names",
    "counter_energy",
    "counter_series",
    "energy_figures",
    "integrated_energy",
    "interpolate",
    "open_reader",
]
