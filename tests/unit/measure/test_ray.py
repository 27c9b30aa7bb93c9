"""The Ray workers' clock offsets, on simulated clocks with known shifts (no Ray needed)."""

from __future__ import annotations

import random

import pytest

from benchlib.measure.load._ray import ClockSample, clock_offset

US = 1_000


def _round_trip(t0: int, out_ns: int, back_ns: int, mono_shift: int,
                wall_shift: int) -> ClockSample:
    """A call sent at driver time ``t0`` that takes ``out_ns`` to reach an actor whose
    monotonic clock reads ``mono_shift`` ahead of the driver's and whose wall clock reads
    ``wall_shift`` ahead, and ``back_ns`` to return. The driver's wall clock is its monotonic
    clock plus a fixed epoch."""
    epoch = 1_700_000_000 * 10**9
    at = t0 + out_ns
    t1 = at + back_ns
    return ClockSample(t0, t0 + epoch, at + mono_shift, at + epoch + wall_shift, t1,
                       t1 + epoch)


@pytest.mark.parametrize(("mono_shift", "wall_shift"),
                         [(0, 0), (-7_000 * US, 3_250 * US), (86_400 * 10**9, -40 * US)])
def test_the_offset_is_within_half_the_shortest_round_trip_of_the_truth(
        mono_shift: int, wall_shift: int) -> None:
    rng = random.Random(7)
    samples, t = [], 10**12
    for _ in range(8):  # legs of 20 µs to 2 ms, never symmetric
        out, back = rng.randint(20 * US, 2_000 * US), rng.randint(20 * US, 2_000 * US)
        samples.append(_round_trip(t, out, back, mono_shift, wall_shift))
        t += out + back + 50 * US
    mono, wall, half = clock_offset(samples)
    shortest = min(s.mono_after - s.mono_before for s in samples)
    assert half == shortest // 2
    # the driver's clock minus the actor's, and the actor's wall minus the driver's
    assert abs(mono - (-mono_shift)) <= half
    assert abs(wall - wall_shift) <= half


def test_a_lopsided_round_trip_errs_by_at_most_half_of_it() -> None:
    """Every leg out is instant and every way back slow: the worst case of the method."""
    sample = _round_trip(5 * 10**9, 0, 900 * US, 1_234 * US, 0)
    mono, wall, half = clock_offset([sample])
    assert half == 450 * US
    assert mono - (-1_234 * US) == 450 * US  # exactly the bound, not more
    assert abs(wall) == 450 * US


def test_the_shortest_round_trip_is_the_one_used() -> None:
    slow = _round_trip(0, 5_000 * US, 100 * US, 10 * US, 0)  # one leg queued: 2.4 ms off
    fast = _round_trip(10**7, 30 * US, 30 * US, 10 * US, 0)
    mono, _, half = clock_offset([slow, fast])
    assert (mono, half) == (-10 * US, 30 * US)
