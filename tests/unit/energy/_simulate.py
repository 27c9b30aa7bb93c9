"""Synthetic devices for the energy tests: piecewise-constant power, and what a counter (in
its unit, wrapping, lagging its reads) and a power sensor read of it at given instants."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from benchlib.energy import Device, Reading, Sample


@dataclass(frozen=True)
class Profile:
    """Power in W from each step's start time on (0 W before the first)."""

    steps: Sequence[tuple[float, float]]

    def power(self, t: float) -> float:
        i = bisect.bisect_right([s for s, _ in self.steps], t) - 1
        return self.steps[i][1] if i >= 0 else 0.0

    def energy(self, t: float) -> float:
        """Joules from time 0 to ``t``."""
        total = 0.0
        for (start, watts), end in zip(self.steps, [*(s for s, _ in self.steps[1:]), None],
                                       strict=True):
            stop = t if end is None else min(t, end)
            if stop > start:
                total += watts * (stop - start)
        return total

    def between(self, a: float, b: float) -> float:
        return self.energy(b) - self.energy(a)


@dataclass(frozen=True)
class Sim:
    """How one device is read: counter unit (J per count), wrap, lag, whether it has a
    counter and a power sensor, its clocks and throttle reasons."""

    profile: Profile
    unit_j: float = 1e-3
    wrap: int | None = None
    lag_s: float = 0.0
    counter: bool = True
    power: bool = True
    offset: int = 0
    sm_clock: int | None = None
    throttle: tuple[str, ...] = ()

    def device(self, name: str) -> Device:
        return Device(name=name, counter_unit_j=self.unit_j, counter_wrap=self.wrap,
                      power_source="instant" if self.power else "none")

    def reading(self, t: float) -> Reading:
        count = None
        if self.counter:
            count = self.offset + int(self.profile.energy(max(0.0, t - self.lag_s))
                                      / self.unit_j)
            if self.wrap is not None:
                count %= self.wrap
        return Reading(counter=count, power_w=self.profile.power(t) if self.power else None,
                       sm_clock_mhz=self.sm_clock, throttle=self.throttle)


def samples(sims: Sequence[Sim], times: Sequence[float]) -> list[Sample]:
    return [Sample(t, tuple(s.reading(t) for s in sims)) for t in times]


def ticks(start: float, end: float, step: float) -> list[float]:
    n = round((end - start) / step)
    return [start + i * step for i in range(n + 1)]
