"""The search on its own: a probe with a known answer, wherever the start lies."""

from __future__ import annotations

import math

import pytest

from benchlib.sweep import bisect_knee


@pytest.mark.parametrize("knee", [1, 2, 3, 5, 6, 7, 13, 31, 100, 999])
@pytest.mark.parametrize("start", [1, 4, 6, 7, 64, 1000])
def test_the_knee_is_found_exactly_in_log_steps(knee: int, start: int) -> None:
    probed: list[float] = []

    def probe(c: float) -> bool:
        probed.append(c)
        return c <= knee

    found = bisect_knee(probe, start=start, floor=1, ceiling=1024, integer=True)
    assert found.passed == knee and found.failed == knee + 1
    assert len(probed) == len(set(probed))  # a load is never probed twice
    assert len(probed) <= 2 * math.ceil(math.log2(1024)) + 2
    assert [load for load, _ in found.probes] == probed


def test_a_ceiling_that_passes_is_said() -> None:
    found = bisect_knee(lambda c: True, start=8, floor=1, ceiling=100, integer=True)
    assert found.passed == 100 and found.failed is None and found.ceiling_reached
    assert [c for c, _ in found.probes] == [8, 16, 32, 64, 100]


def test_nothing_passes_down_to_the_floor() -> None:
    found = bisect_knee(lambda c: False, start=8, floor=1, ceiling=100, integer=True)
    assert found.passed is None and found.failed == 1 and not found.ceiling_reached
    assert [c for c, _ in found.probes] == [8, 4, 2, 1]


def test_a_rate_is_bracketed_to_five_percent() -> None:
    found = bisect_knee(lambda r: r <= 37.3, start=10, floor=10 / 64, ceiling=640,
                        integer=False)
    assert found.passed is not None and found.failed is not None
    assert found.passed <= 37.3 < found.failed
    assert found.failed - found.passed <= 0.05 * found.passed


def test_a_given_step_sets_the_resolution() -> None:
    found = bisect_knee(lambda c: c <= 37, start=10, floor=1, ceiling=640, integer=True,
                        step=4)
    assert found.passed is not None and found.failed is not None
    assert found.failed - found.passed <= 4 and found.passed <= 37 < found.failed


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="floor"):
        bisect_knee(lambda c: True, start=1, floor=8, ceiling=4, integer=True)
