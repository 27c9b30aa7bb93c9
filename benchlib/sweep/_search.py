"""The search itself, apart from any server: exponential steps, then bisection.

From the start load, double while the probe passes (up to ``ceiling``); if the start already
fails, halve until one passes (down to ``floor``). Between the last pass and the first fail,
bisect until they are at most ``step`` apart. The knee is the highest load that passed. A
load is never probed twice, and the probe function decides pass or fail however it likes
(:func:`benchlib.sweep.sweep` measures; the tests give a known answer), so the number of
probes is ``log2`` of the span in both phases.

Concurrency is an integer (``step`` 1 finds the knee exactly); a request rate is a real
number, rounded to 4 significant digits so each probe has its own name, with a step of 5 %
of the last pass unless one is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Bracket", "bisect_knee"]

#: the rate search's default resolution: 5 % of the highest load that passed
RATE_RESOLUTION = 0.05


@dataclass
class Bracket:
    """What the search learned: the highest load that passed, the lowest that failed, and
    every probe in the order it ran."""

    passed: float | None = None
    failed: float | None = None
    probes: list[tuple[float, bool]] = field(default_factory=list)

    @property
    def ceiling_reached(self) -> bool:
        """Every load up to the ceiling passed: the knee is at or above it."""
        return self.passed is not None and self.failed is None


def _round(x: float, integer: bool) -> float:
    if integer:
        return float(max(1, round(x)))
    return float(f"{x:.4g}")


def bisect_knee(probe: Callable[[float], bool], *, start: float, floor: float,
                ceiling: float, integer: bool, step: float | None = None) -> Bracket:
    """Search the load in ``[floor, ceiling]`` where ``probe`` turns from pass to fail.

    ``probe(load)`` → whether the load meets the SLOs (it may raise to stop the search).
    ``step``: stop when the last pass and the first fail are this close (default 1 for an
    ``integer`` load, else 5 % of the last pass).
    """
    if not 0 < floor <= ceiling:
        raise ValueError(f"need 0 < floor ({floor}) <= ceiling ({ceiling})")
    floor, ceiling = float(floor), float(ceiling)
    out = Bracket()
    seen: dict[float, bool] = {}

    def at(load: float) -> bool:
        load = min(ceiling, max(floor, _round(load, integer)))
        if load not in seen:
            seen[load] = probe(load)
            out.probes.append((load, seen[load]))
        ok = seen[load]
        if ok and (out.passed is None or load > out.passed):
            out.passed = load
        if not ok and (out.failed is None or load < out.failed):
            out.failed = load
        return ok

    x = min(ceiling, max(floor, _round(start, integer)))
    if at(x):
        while x < ceiling and at(min(ceiling, 2 * x)):
            x = min(ceiling, 2 * x)
    else:
        while x > floor:
            x = max(floor, float(int(x) // 2) if integer else x / 2)
            if at(x):
                break

    def resolution() -> float:
        if step is not None:
            return step
        if integer:
            return 1.0
        assert out.passed is not None
        return RATE_RESOLUTION * out.passed

    while out.passed is not None and out.failed is not None \
            and out.failed - out.passed > resolution():
        mid = (out.passed + out.failed) / 2
        mid = math.floor(mid) if integer else _round(mid, integer)
        if mid in (out.passed, out.failed):  # rounding leaves nothing between them
            break
        at(mid)
    return out
