"""The energy of one measurement, typed: :class:`EnergyResult` (whose field descriptions
document the ``energy`` block of 03_measure's results) and its parts.

Every figure is null, never 0, when it is not known, and ``reason`` then says why (no NVML
and no RAPL, a remote endpoint, no request sent). A figure that is less exact than it looks
says so: ``energy_j_bounds`` brackets the energy, ``method`` says whether it came from the
energy counter or from integrating power samples, ``peak_power_source`` which power the peak
is, and ``flags`` everything else the kit knows to doubt.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib.energy._readings import PowerSource, Source

__all__ = ["ClockStats", "DeviceEnergy", "EnergyResult", "Method"]

#: how the energy was obtained: the devices' energy counters (exact between two reads), or
#: power samples integrated over time (a device without a counter: less exact)
Method = Literal["counter", "integrated_power"]


class ClockStats(BaseModel):
    """A clock over the measurement's samples, every device's together."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: int = Field(description="lowest reading, MHz")
    max: int = Field(description="highest reading, MHz")
    mean: float = Field(description="mean of the readings, MHz")


class DeviceEnergy(BaseModel):
    """One device's share of the figures (a GPU, or a RAPL domain)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="the device as the reader names it (GPU index, name; "
                                  "RAPL domain)")
    method: Method | None = Field(description="counter or integrated_power (null: neither)")
    energy_j: float | None = Field(description="joules over the measurement window, idle "
                                               "included")
    avg_power_w: float | None = Field(description="energy_j / the window's seconds")
    peak_power_w: float | None = Field(description="highest power sample in the window")
    idle_power_w: float | None = Field(description="mean power over the idle window")
    power_source: PowerSource = Field(description="which power readings the peak is of")


class EnergyResult(BaseModel):
    """The energy of the devices the engine ran on over one measurement (every device
    summed), from NVML (GPUs) or RAPL (CPU packages), with the idle draw measured just
    before the scenario's requests; or no figures and the ``reason``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Source | None = Field(description="nvml (GPUs), rapl (CPU packages and DRAM), "
                                              "or null: nothing was read (see reason)")
    reason: str | None = Field(
        None, description="why there are no figures (null when there are)")
    devices: list[str] = Field(default_factory=list, description="the devices summed")
    method: Method | None = Field(
        None, description="counter: from the devices' energy counters, exact between two "
                          "reads; integrated_power: power samples integrated over time (a "
                          "device without the counter: less exact, no bounds)")
    interval_s: float | None = Field(None, description="seconds between samples, as asked")
    samples: int = Field(0, description="samples inside the measurement window")
    window_s: float | None = Field(
        None, description="the measurement window in seconds: the scenario's duration (the "
                          "result's `duration`, ending at its last request's end)")
    idle_window_s: float | None = Field(
        None, description="seconds of the idle window, measured just before the scenario "
                          "(before its warmups)")
    energy_j: float | None = Field(
        None, description="joules over the window, every device summed, idle draw included; "
                          "the counter interpolated linearly at the window's edges")
    energy_j_bounds: tuple[float, float] | None = Field(
        None, description="[low, high] joules the energy lies within for a counter that "
                          "lags its reads by up to one sampling interval: reads inside the "
                          "window to reads around it (null: integrated, or no read after "
                          "the window)")
    energy_above_idle_j: float | None = Field(
        None, description="energy_j − idle_power_w × window_s: what the load added to the "
                          "idle draw (negative: the idle window was not at rest; see flags)")
    energy_j_per_output_token: float | None = Field(
        None, description="energy_j / the result's total_output_tokens (the server's usage "
                          "counts where it sent them), idle included")
    energy_above_idle_j_per_output_token: float | None = Field(
        None, description="energy_above_idle_j / total_output_tokens")
    energy_j_per_request: float | None = Field(
        None, description="energy_j / completed requests, idle included")
    avg_power_w: float | None = Field(None, description="energy_j / window_s")
    peak_power_w: float | None = Field(
        None, description="highest sum over the devices of one sample's power in the window "
                          "(sampled every interval_s: a shorter spike can be higher)")
    peak_power_source: PowerSource | None = Field(
        None, description="instant: NVML's instantaneous power; power_usage: NVML's power "
                          "usage (a 1 s average on Ampere and newer but GA100: the peak is "
                          "smoothed); none: the counter's increase over one interval")
    idle_power_w: float | None = Field(
        None, description="mean power over the idle window, every device summed")
    idle_at_rest: bool | None = Field(
        None, description="true: NVML called every GPU idle during the idle window; false: "
                          "a GPU was held awake (an engine's CUDA context, clocks still up "
                          "after earlier work), so idle_power_w is an awake GPU's draw with "
                          "nothing asked of it, above a parked one's; null: not known (RAPL)")
    energy_includes_idle: bool | None = Field(
        None, description="true: energy_j, energy_j_per_output_token, energy_j_per_request "
                          "and avg_power_w include the idle draw (energy_above_idle_* leave "
                          "it out)")
    sm_clock_mhz: ClockStats | None = Field(
        None, description="GPU SM clock over the window's samples (null: not read)")
    mem_clock_mhz: ClockStats | None = Field(
        None, description="GPU memory clock over the window's samples (null: not read)")
    throttle_reasons: dict[str, float] = Field(
        default_factory=dict, description="each NVML clock event (throttle) reason seen in "
                                          "the window → the fraction of its samples it was "
                                          "active on any device")
    per_device: list[DeviceEnergy] = Field(default_factory=list,
                                           description="each device's own figures")
    flags: list[str] = Field(default_factory=list,
                             description="what makes a figure less exact than it looks")
    samples_file: str | None = Field(
        None, description="the per-sample JSONL beside the result JSON (null: not written)")
