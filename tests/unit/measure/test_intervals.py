"""Bootstrap intervals (measure._intervals): the p99 rule, one repeat against several, the
ratio verdicts, and the seed making them reproducible."""

from __future__ import annotations

import numpy as np
import pytest

from benchlib.measure._intervals import (
    MIN_THROUGHPUT_REPEATS,
    Repeat,
    intervals_of,
    min_requests,
    ratio_interval,
)


def _repeat(rng: np.random.Generator, n: int, scale: float = 1.0,
            tput: float | None = 100.0) -> Repeat:
    ttft = 100.0 * scale * rng.lognormal(0.0, 0.3, n)
    tpot = 20.0 * scale * rng.lognormal(0.0, 0.1, n)
    return Repeat(ttft=ttft, ttft_text=ttft, tpot=tpot, tpot_text=tpot,
                  itl=[20.0 * scale * rng.lognormal(0.0, 0.3, 7) for _ in range(n)],
                  output_throughput=tput)


def test_min_requests_rule() -> None:
    assert min_requests(99) == 100 and min_requests(90) == 10 and min_requests(50) == 2
    assert min_requests(99.9) == 1000


def test_one_repeat_comes_from_requests_and_p99_needs_100() -> None:
    rng = np.random.default_rng(1)
    few = intervals_of([_repeat(rng, 60)], seed=3, resamples=300)
    assert few.source == "requests" and few.repeats == 1
    p99 = few.figures["p99_ttft_ms"]
    assert p99.value is None and p99.low is None and "60 < 100" in p99.note
    med = few.figures["median_ttft_ms"]
    assert med.value is not None and med.low is not None and med.high is not None
    assert med.low < med.value < med.high
    tput = few.figures["output_throughput"]
    assert tput.value == 100.0 and tput.low is None and "repeats" in tput.note
    enough = intervals_of([_repeat(rng, 150)], seed=3, resamples=300)
    assert enough.figures["p99_ttft_ms"].value is not None


def test_repeats_widen_by_run_to_run_spread_and_are_reproducible() -> None:
    rng = np.random.default_rng(2)
    # five runs whose levels differ by ±10 %: the repeats' interval must cover that spread
    runs = [_repeat(rng, 100, scale) for scale in (0.9, 0.95, 1.0, 1.05, 1.1)]
    pooled = intervals_of(runs, seed=5, resamples=400)
    one = intervals_of(runs[2:3], seed=5, resamples=400)
    width = pooled.figures["median_tpot_ms"]
    assert pooled.source == "repeats" and len(runs) >= MIN_THROUGHPUT_REPEATS
    assert (width.high or 0) - (width.low or 0) > 2 * ((one.figures["median_tpot_ms"].high or 0)
                                                       - (one.figures["median_tpot_ms"].low
                                                          or 0)) / 5
    assert pooled.figures["output_throughput"].low is not None
    assert intervals_of(runs, seed=5, resamples=400) == pooled


def test_ratio_verdicts() -> None:
    rng = np.random.default_rng(3)
    base = [_repeat(rng, 200)]
    same = [_repeat(np.random.default_rng(3), 200)]
    slow = [_repeat(np.random.default_rng(3), 200, scale=1.1)]
    aa = ratio_interval(same, base, "median_tpot_ms", seed=1, resamples=400)
    assert aa.ratio == pytest.approx(1.0) and aa.significant is False
    ab = ratio_interval(slow, base, "median_tpot_ms", seed=1, resamples=400)
    assert ab.ratio == pytest.approx(1.1) and ab.significant is True
    assert ab.low is not None and ab.high is not None and 1.0 < ab.low < 1.1 < ab.high
    speedup = ratio_interval(slow, base, "median_tpot_ms", seed=1, resamples=400, invert=True)
    assert speedup.ratio == pytest.approx(1 / 1.1) and speedup.significant is True
    tput = ratio_interval(slow, base, "output_throughput", seed=1, resamples=100)
    assert tput.significant is None and "repeats" in tput.note
    few = ratio_interval([_repeat(rng, 50)], base, "p99_itl_ms", seed=1, resamples=100)
    assert few.ratio is None and few.significant is None and "50 < 100" in few.note
