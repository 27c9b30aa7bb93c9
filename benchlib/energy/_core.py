"""Readings → figures: pure arithmetic over the samples a reader took, tested on synthetic
readings (no NVML, no sysfs).

Energy comes from each device's counter where it has one: the increase between two reads is
exact (in the counter's unit), so the only inexact parts are the window's two edges, which
fall between reads. There the cumulative energy is interpolated linearly for the figure,
and bracketed for ``energy_j_bounds``: the low bound counts only reads inside the window,
the high one reads around it, each one read further in (low) or out (high), so the bracket
holds for a counter that lags its reads by up to one sampling interval — an H200's counter
was seen to advance in steps about 100 ms apart (one 100 ms interval showed twice the power
of its neighbours, the next the rest). A RAPL counter wraps at ``max_energy_range_uj``:
one wrap between two reads is undone (at 100 ms a package would need to draw terawatts to
wrap twice); a counter that goes down without a wrap (a driver reload) makes that device's
counter unusable, named in the flags, and its energy is integrated from power instead.

A device without a counter (older NVML) has its power samples integrated (trapezoids,
edges interpolated): ``method`` is then ``integrated_power``, without bounds. The idle power
is the counter's increase over the idle window divided by its length (integrated: the mean
power sample). The peak is the highest sum of the devices' power at one sample; without
power readings (RAPL) the highest sum of counter increases over one interval.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchlib.energy._readings import Device, Sample, Source
from benchlib.energy._result import ClockStats, DeviceEnergy, EnergyResult, Method

__all__ = ["Bracket", "Window", "counter_energy", "counter_series", "energy_figures",
           "integrated_energy", "interpolate"]

Points = list[tuple[float, float]]


@dataclass(frozen=True, slots=True)
class Window:
    """A span of ``time.perf_counter`` seconds."""

    start_s: float
    end_s: float

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s

    def holds(self, t: float) -> bool:
        return self.start_s <= t <= self.end_s


@dataclass(frozen=True, slots=True)
class Bracket:
    """An energy (J) and the bounds it lies within (None: a side not known)."""

    estimate: float
    low: float | None
    high: float | None


def counter_series(samples: Sequence[Sample], k: int, device: Device
                   ) -> tuple[Points, str | None]:
    """Device ``k``'s counter as ``(t, joules since its first read)``, one point per sample
    it gave a counter on, wraps undone; ``([], why)`` when the counter went down without a
    wrap to explain it (or there is no counter)."""
    points: Points = []
    last: int | None = None
    total = 0
    for s in samples:
        value = s.readings[k].counter
        if value is None:
            continue
        if last is not None:
            step = value - last
            if step < 0:
                if device.counter_wrap is None:
                    return [], (f"{device.name}: the energy counter went down ({last} → "
                                f"{value}: the driver was reloaded?); its energy is "
                                "integrated from power instead")
                step += device.counter_wrap
            total += step
        last = value
        points.append((s.t_s, total * device.counter_unit_j))
    return points, None


def interpolate(points: Points, t: float) -> float | None:
    """The value at ``t``, linear between the points around it; None outside them."""
    for (t0, v0), (t1, v1) in itertools.pairwise(points):
        if t0 <= t <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    if points and points[0][0] == t:
        return points[0][1]
    return None


def counter_energy(points: Points, window: Window) -> Bracket | None:
    """The energy over ``window`` from cumulative counter points: interpolated at the edges,
    with the bounds the module docstring derives; None when the points do not span it."""
    start, end = interpolate(points, window.start_s), interpolate(points, window.end_s)
    if start is None or end is None:
        return None
    times = [t for t, _ in points]
    inside = [i for i, t in enumerate(times) if window.holds(t)]
    low = points[inside[-1]][1] - points[inside[1]][1] if len(inside) >= 2 else 0.0
    before = max(i for i, t in enumerate(times) if t <= window.start_s)
    after = min(i for i, t in enumerate(times) if t >= window.end_s)
    high = points[after + 1][1] - points[before][1] if after + 1 < len(points) else None
    return Bracket(end - start, max(low, 0.0), high)


def integrated_energy(points: Points, window: Window) -> float | None:
    """Power points ``(t, W)`` integrated over ``window`` by trapezoids, the edges
    interpolated; None when the points do not span it."""
    start, end = interpolate(points, window.start_s), interpolate(points, window.end_s)
    if start is None or end is None:
        return None
    inner = [(t, p) for t, p in points if window.start_s < t < window.end_s]
    edge = [(window.start_s, start), *inner, (window.end_s, end)]
    return sum((t1 - t0) * (p0 + p1) / 2
               for (t0, p0), (t1, p1) in itertools.pairwise(edge))


def _power_points(samples: Sequence[Sample], k: int) -> Points:
    return [(s.t_s, p) for s in samples for p in [s.readings[k].power_w] if p is not None]


@dataclass
class _Figures:
    """One device's figures, before they are summed."""

    method: Method | None = None
    energy: Bracket | None = None
    idle_w: float | None = None
    flags: list[str] = field(default_factory=list)


def _one_device(samples: Sequence[Sample], k: int, device: Device, idle: Window,
                window: Window, counted: tuple[Points, str | None]) -> _Figures:
    """Device ``k``'s figures from its counter points (``counted``: :func:`counter_series`'s
    answer), else from its power samples."""
    points, fault = counted
    out = _Figures(flags=[fault] if fault else [])
    if points:
        out.method = "counter"
        out.energy = counter_energy(points, window)
        idle_j = counter_energy(points, idle)
        out.idle_w = idle_j.estimate / idle.seconds if idle_j and idle.seconds > 0 else None
        if out.energy is not None and out.energy.high is None:
            out.flags.append(f"{device.name}: no read after the window: the energy's upper "
                             "bound is unknown")
        return out
    power = _power_points(samples, k)
    if power:
        out.method = "integrated_power"
        joules = integrated_energy(power, window)
        out.energy = Bracket(joules, None, None) if joules is not None else None
        at_idle = [p for t, p in power if idle.holds(t)]
        out.idle_w = sum(at_idle) / len(at_idle) if at_idle else None
        out.flags.append(f"{device.name}: no energy counter: energy integrated from power "
                         f"samples ({device.power_source}), less exact")
    return out


def _peak(samples: Sequence[Sample], series: Sequence[Points], window: Window
          ) -> float | None:
    """The highest sum of the devices' power at one sample in the window; without power
    readings, of their counter increases over one interval (both ends in the window)."""
    inside = [s for s in samples if window.holds(s.t_s)]
    sums = [sum(p for p in powers if p is not None) for s in inside
            for powers in [[r.power_w for r in s.readings]] if None not in powers]
    if sums:
        return max(sums)
    if not inside or any(not pts for pts in series):
        return None
    at = [dict(pts) for pts in series]
    steps = []
    for a, b in itertools.pairwise(inside):
        got = [(c.get(a.t_s), c.get(b.t_s)) for c in at]
        pairs = [(x, y) for x, y in got if x is not None and y is not None]
        if b.t_s > a.t_s and len(pairs) == len(got):
            steps.append(sum(y - x for x, y in pairs) / (b.t_s - a.t_s))
    return max(steps) if steps else None


def _at_rest(samples: Sequence[Sample], devices: Sequence[Device], idle: Window
             ) -> bool | None:
    """Whether NVML called every device idle (its ``gpu_idle`` clock event) at some sample of
    the idle window; None when no device named its clock events (RAPL). An engine's CUDA
    context holds a GPU awake: an H200 drew ~75 W parked, ~120 W with a context and nothing
    asked of it."""
    inside = [s for s in samples if idle.holds(s.t_s)]
    if not inside or not any(r.throttle for s in samples for r in s.readings):
        return None
    return all(any("gpu_idle" in s.readings[k].throttle for s in inside)
               for k in range(len(devices)))


def _clock(values: list[int]) -> ClockStats | None:
    return ClockStats(min=min(values), max=max(values),
                      mean=sum(values) / len(values)) if values else None


def _throttle(samples: Sequence[Sample], window: Window) -> dict[str, float]:
    inside = [s for s in samples if window.holds(s.t_s)]
    seen: dict[str, int] = {}
    for s in inside:
        for reason in {r for reading in s.readings for r in reading.throttle}:
            seen[reason] = seen.get(reason, 0) + 1
    return {r: n / len(inside) for r, n in sorted(seen.items())}


def _sum(values: Sequence[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else \
        sum(v for v in values if v is not None)


def _ratio(a: float | None, b: float | int | None) -> float | None:
    return a / b if a is not None and b else None


def energy_figures(source: Source, devices: Sequence[Device], samples: Sequence[Sample], *,
                   interval_s: float, idle: Window, window: Window,
                   output_tokens: int | None, requests: int | None) -> EnergyResult:
    """The figures of one measurement: ``window`` is the scenario's own span, ``idle`` the
    idle window before it; ``output_tokens`` and ``requests`` what the result counts
    (``total_output_tokens``, ``completed``). A figure a device cannot give makes the sum
    null (a sum over some GPUs of the engine would look like all of them)."""
    counted = [counter_series(samples, k, d) for k, d in enumerate(devices)]
    series = [points for points, _ in counted]
    figures = [_one_device(samples, k, d, idle, window, counted[k])
               for k, d in enumerate(devices)]
    flags = [f for fig in figures for f in fig.flags]
    energies = [f.energy for f in figures]
    energy = _sum([e.estimate if e else None for e in energies])
    lows = _sum([e.low if e else None for e in energies])
    highs = _sum([e.high if e else None for e in energies])
    idle_w = _sum([f.idle_w for f in figures])
    methods = {f.method for f in figures}
    method: Method | None = ("integrated_power" if "integrated_power" in methods else
                             "counter" if methods == {"counter"} else None)
    if energy is None:
        flags.append("the samples do not span the window (or a device gave neither energy nor "
                     "power): no energy figure")
    above = energy - idle_w * window.seconds if energy is not None and idle_w is not None \
        else None
    if above is not None and above < 0:
        flags.append("the energy above idle is negative: the load drew no more than the idle "
                     "window did (a load too light to tell apart, or a device still busy "
                     "before the scenario)")
    power_sources = {d.power_source for d in devices}
    inside = [s for s in samples if window.holds(s.t_s)]
    per_device = []
    for k, (d, fig) in enumerate(zip(devices, figures, strict=True)):
        peak = _peak([_only(s, k) for s in samples], [series[k]], window)
        per_device.append(DeviceEnergy(
            name=d.name, method=fig.method,
            energy_j=fig.energy.estimate if fig.energy else None,
            avg_power_w=_ratio(fig.energy.estimate if fig.energy else None, window.seconds),
            peak_power_w=peak, idle_power_w=fig.idle_w, power_source=d.power_source))
    return EnergyResult(
        source=source, devices=[d.name for d in devices], method=method,
        interval_s=interval_s, samples=len(inside), window_s=window.seconds,
        idle_window_s=idle.seconds, energy_j=energy,
        energy_j_bounds=(lows, highs) if method == "counter" and lows is not None
        and highs is not None else None,
        energy_above_idle_j=above,
        energy_j_per_output_token=_ratio(energy, output_tokens),
        energy_above_idle_j_per_output_token=_ratio(above, output_tokens),
        energy_j_per_request=_ratio(energy, requests),
        avg_power_w=_ratio(energy, window.seconds),
        peak_power_w=_peak(samples, series, window),
        peak_power_source=power_sources.pop() if len(power_sources) == 1 else None,
        idle_power_w=idle_w, idle_at_rest=_at_rest(samples, devices, idle),
        energy_includes_idle=True if energy is not None else None,
        sm_clock_mhz=_clock([c for s in inside for r in s.readings
                             for c in [r.sm_clock_mhz] if c is not None]),
        mem_clock_mhz=_clock([c for s in inside for r in s.readings
                              for c in [r.mem_clock_mhz] if c is not None]),
        throttle_reasons=_throttle(samples, window), per_device=per_device, flags=flags)


def _only(sample: Sample, k: int) -> Sample:
    """``sample`` with device ``k``'s reading alone."""
    return Sample(sample.t_s, (sample.readings[k],))
