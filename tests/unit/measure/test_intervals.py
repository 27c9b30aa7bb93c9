"""Bootstrap intervals (measure._intervals): the p99 rule, one repeat against several, the
ratio verdicts, and the seed making them reproducible."""

from __future__ import annotations

import numpy as np
import pytest

from benchlib.measure.results._records import RequestRecord
from benchlib.measure.stats._intervals import (
    MIN_THROUGHPUT_REPEATS,
    Repeat,
    _bounds,
    _point,
    _row_percentiles,
    _too_few,
    bootstrap,
    intervals_of,
    min_requests,
    ratio_interval,
)

from ._outcomes import outcome

#: the bootstrap's two ways, each held to the same distributions: a block of resamples at once
#: (padded units), and one resample at a time (what it does for ragged or large units)
BOTH_PATHS = pytest.mark.parametrize("block", [4_000_000, 1], ids=["block", "one-at-a-time"])


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


# ------------------------------------------------------------------ the rules one by one
# (found by mutation testing: tools/mutation.py; each pins one rule the tests above left open)

def _record(ok: bool = True, ttft: float | None = 10.0, first: float | None = 9.0,
            tpot: float | None = 2.0, e2el: float | None = 29.0, tokens: int = 11,
            itl: tuple[float, ...] = (1.0, 3.0)) -> RequestRecord:
    base = RequestRecord.from_outcome(outcome(0, 0, 5, [1, 1], 3), [1.0] * 3, 0)
    return base.model_copy(update={
        "success": ok, "ttft_ms": ttft, "ttft_first_choice_ms": first, "tpot_ms": tpot,
        "e2el_ms": e2el, "output_tokens": tokens, "itl_ms": list(itl)})


def _const(value: float, n: int, tput: float | None = 100.0) -> Repeat:
    arr = np.full(n, value)
    return Repeat(ttft=arr, ttft_text=arr, tpot=arr, tpot_text=arr,
                  itl=[np.array([value]) for _ in range(n)], output_throughput=tput)


def test_min_requests_of_the_maximum() -> None:
    assert min_requests(100) == 1


def test_repeat_of_records() -> None:
    """vLLM's TPOT is (E2EL − TTFT to the first choice) / (N − 1); a failed request, a
    one-token answer and missing stamps contribute nothing; ITL gaps stay per request."""
    rep = Repeat.of([_record(), _record(ok=False, ttft=1.0),
                     _record(tokens=1), _record(e2el=None, ttft=None, tpot=None),
                     _record(first=None, itl=()), _record(tokens=2, e2el=12.0)],
                    output_throughput=7.0)
    assert rep.ttft.tolist() == [9.0, 9.0, 9.0, 9.0]
    assert rep.ttft_text.tolist() == [10.0, 10.0, 10.0, 10.0]
    assert rep.tpot.tolist() == [2.0, 3.0]        # (29 − 9) / (11 − 1), (12 − 9) / (2 − 1)
    assert rep.tpot_text.tolist() == [2.0, 2.0, 2.0, 2.0]
    assert [g.tolist() for g in rep.itl] == [[1.0, 3.0]] * 3 + [[], [1.0, 3.0]]
    assert rep.requests == 5 and rep.output_throughput == 7.0
    assert all(a.dtype == np.float64 for a in (rep.ttft, rep.ttft_text, rep.tpot, *rep.itl))
    assert rep.values("itl").tolist() == [1.0, 3.0] * 4
    assert rep.values("ttft").tolist() == [9.0] * 4


def test_drawn_picks_every_request_and_nothing_else() -> None:
    rng = np.random.default_rng(0)
    rep = Repeat(ttft=np.array([1.0, 2.0]), ttft_text=np.array([1.0, 2.0]), tpot=np.empty(0),
                 tpot_text=np.empty(0), itl=[np.array([5.0, 6.0]), np.array([7.0])],
                 output_throughput=None)
    ttft = np.concatenate([rep.drawn("ttft", rng) for _ in range(50)])
    assert set(ttft.tolist()) == {1.0, 2.0}
    itl = [rep.drawn("itl", rng).tolist() for _ in range(50)]
    assert all(len(d) >= 2 for d in itl) and {5.0, 7.0} <= {x for d in itl for x in d}
    # a drawn request brings all its gaps: 2 to 4 of them, never one gap on its own
    assert {len(d) for d in itl} == {2, 3, 4}
    assert all(d.count(5.0) == d.count(6.0) for d in itl)
    assert rep.drawn("tpot", rng).size == 0
    none = Repeat(ttft=np.empty(0), ttft_text=np.empty(0), tpot=np.empty(0),
                  tpot_text=np.empty(0), itl=[], output_throughput=None)
    assert none.drawn("itl", rng).size == 0 and none.values("itl").size == 0


@BOTH_PATHS
def test_two_repeats_are_drawn_as_repeats(block: int) -> None:
    """Two repeats of 10 and of 20: a resample holds repeat 0 twice a quarter of the time, so
    a quarter of the p99s are 10 (request draws alone would almost never give that)."""
    draws = bootstrap([_const(10.0, 20), _const(20.0, 20)], "p99_ttft_ms",
                      np.random.default_rng(5), 400, block)
    assert 0.15 < float(np.mean(draws == 10.0)) < 0.35
    assert 0.6 < float(np.mean(draws == 20.0)) < 0.9  # the rest hold repeat 1


def test_bounds_are_the_central_95_percent() -> None:
    assert _bounds(np.arange(1001.0)) == pytest.approx((25.0, 975.0), abs=1e-9)
    nine_in_ten = np.array([*range(90), *[np.nan] * 10], dtype=np.float64)
    assert _bounds(nine_in_ten) is not None
    assert _bounds(np.array([*range(89), *[np.nan] * 11], dtype=np.float64)) is None
    assert _bounds(np.array([1.0, np.nan])) is None


def test_too_few_is_exactly_below_the_rule() -> None:
    assert _too_few("p99_ttft_ms", 100) == ""
    assert _too_few("p99_ttft_ms", 99) == ("too few requests for a p99: 99 < 100 "
                                           "(not one request above it)")
    assert _too_few("output_throughput", 0) == ""


def test_points_without_values_are_none() -> None:
    empty = Repeat(ttft=np.empty(0), ttft_text=np.empty(0), tpot=np.empty(0),
                   tpot_text=np.empty(0), itl=[], output_throughput=None)
    assert _point([empty], "output_throughput") is None
    assert _point([empty], "median_tpot_ms") is None
    assert _point([_const(3.0, 4, tput=8.0), _const(3.0, 4, tput=6.0)],
                  "output_throughput") == 7.0


def test_notes_and_sources() -> None:
    one = intervals_of([_const(10.0, 100)], seed=1, resamples=1)
    assert one.source == "requests" and one.resamples == 1
    assert one.figures["median_ttft_ms"].note == ""
    assert one.figures["median_ttft_ms"].low == one.figures["median_ttft_ms"].high == 10.0
    assert one.figures["output_throughput"].note.startswith("throughput is one number per run")
    single = intervals_of([_repeat(np.random.default_rng(2), 200)], seed=1, resamples=1)
    drawn_once = single.figures["median_ttft_ms"]  # one resample: both ends are its value
    assert drawn_once.low == drawn_once.high != drawn_once.value
    two = intervals_of([_const(1.0, 50), _const(2.0, 50)], seed=1, resamples=200)
    assert two.source == "repeats"
    spread = two.figures["median_ttft_ms"]
    assert spread.low == 1.0 and spread.high == 2.0  # both repeats drawn twice, some of 200
    five = intervals_of([_const(1.0, 5, tput=t) for t in (1.0, 2.0, 3.0, 4.0, 5.0)],
                        seed=2, resamples=200)
    tput = five.figures["output_throughput"]
    assert tput.note == "" and tput.low is not None and tput.high is not None
    assert tput.low < 3.0 < tput.high
    # tpot only in repeat 0: a quarter of the resamples hold repeat 1 twice and lack it
    gap = Repeat(ttft=np.full(5, 1.0), ttft_text=np.full(5, 1.0), tpot=np.empty(0),
                 tpot_text=np.empty(0), itl=[np.array([1.0])] * 5, output_throughput=None)
    mixed = intervals_of([_const(1.0, 5), gap], seed=3, resamples=200)
    tpot = mixed.figures["median_tpot_ms"]
    assert tpot.value == 1.0 and tpot.low is None
    assert tpot.note == "no interval: too few requests with this figure"


def test_ratio_edges() -> None:
    zero = _const(0.0, 100)
    some = _const(5.0, 100)
    for mine, theirs in ((zero, some), (some, zero)):
        for invert in (False, True):
            r = ratio_interval([mine], [theirs], "median_ttft_ms", seed=1, invert=invert)
            assert r.ratio is None and r.note == "a side has no value"
    same = ratio_interval([some], [_const(5.0, 100)], "median_ttft_ms", seed=1,
                          resamples=50)
    assert (same.ratio, same.low, same.high, same.significant) == (1.0, 1.0, 1.0, False)
    few = ratio_interval([some], [some], "output_throughput", seed=1, resamples=50)
    assert few.ratio == 1.0 and few.low is None and few.note.startswith("throughput is one")
    gap = Repeat(ttft=np.full(5, 1.0), ttft_text=np.full(5, 1.0), tpot=np.empty(0),
                 tpot_text=np.empty(0), itl=[np.array([1.0])] * 5, output_throughput=None)
    holes = ratio_interval([_const(1.0, 5), gap], [_const(2.0, 10)], "median_tpot_ms", seed=3,
                           resamples=200)
    assert holes.ratio == 0.5 and holes.low is None
    assert holes.note == "no interval: too few values"


def test_ratio_is_inside_its_interval_both_ways_and_reproducible() -> None:
    rng = np.random.default_rng(4)
    fast, slow = [_repeat(rng, 200, 1.0)], [_repeat(rng, 200, 2.0)]
    for invert in (False, True):
        r = ratio_interval(fast, slow, "median_ttft_ms", seed=9, invert=invert, resamples=300)
        assert r.ratio is not None and r.low is not None and r.high is not None
        assert r.low <= r.ratio <= r.high and r.significant
        assert (r.ratio > 1) == invert
        assert r == ratio_interval(fast, slow, "median_ttft_ms", seed=9, invert=invert,
                                   resamples=300)


def test_row_percentiles_are_numpys_over_each_rows_finite_values() -> None:
    """The bootstrap reads a block of resamples at once: each row's percentile over its finite
    values is numpy's (linear), and a row with none is NaN."""
    rng = np.random.default_rng(4)
    rows = rng.lognormal(0.0, 1.0, (50, 40))
    rows[rng.random(rows.shape) < 0.3] = np.nan
    rows[7] = np.nan
    for p in (0.0, 1.0, 50.0, 90.0, 99.0, 100.0):
        got = _row_percentiles(rows, p)
        assert np.isnan(got[7])
        for i in [k for k in range(50) if k != 7]:
            assert got[i] == pytest.approx(np.percentile(rows[i][np.isfinite(rows[i])], p))


@BOTH_PATHS
def test_a_repeat_brings_its_own_number_of_requests(block: int) -> None:
    """Repeats of 5 requests at 10 and 50 at 20: a resample holding both pools 5 tens and 50
    twenties (median 20); only one holding repeat 0 twice has a median of 10 (a quarter of
    them). Drawn as many requests from each, a mixed pair's median would be 15."""
    draws = bootstrap([_const(10.0, 5), _const(20.0, 50)], "median_ttft_ms",
                      np.random.default_rng(6), 400, block)
    assert set(draws.tolist()) == {10.0, 20.0}
    assert 0.15 < float(np.mean(draws == 10.0)) < 0.35
    itl = bootstrap([_const(10.0, 5), _const(20.0, 50)], "median_itl_ms",
                    np.random.default_rng(6), 400, block)
    assert set(itl.tolist()) == {10.0, 20.0}


@BOTH_PATHS
def test_an_itl_resample_draws_requests_with_all_their_gaps(block: int) -> None:
    """One request of nine 10 ms gaps and one of a single 20 ms gap: drawn as requests, a
    quarter of the resamples hold the second twice (median 20); drawn gap by gap, a median
    of 20 would need six of ten draws to be the one 20."""
    rep = Repeat(ttft=np.array([1.0, 1.0]), ttft_text=np.array([1.0, 1.0]),
                 tpot=np.empty(0), tpot_text=np.empty(0),
                 itl=[np.full(9, 10.0), np.array([20.0])], output_throughput=None)
    draws = bootstrap([rep], "median_itl_ms", np.random.default_rng(8), 400, block)
    assert set(draws.tolist()) == {10.0, 20.0}
    assert 0.15 < float(np.mean(draws == 20.0)) < 0.35


@BOTH_PATHS
def test_a_repeat_of_one_request_brings_one(block: int) -> None:
    """Repeats of one request at 10 and two at 20: a pair of them pools one ten and two
    twenties (median 20), never two tens (15)."""
    draws = bootstrap([_const(10.0, 1), _const(20.0, 2)], "median_ttft_ms",
                      np.random.default_rng(9), 400, block)
    assert set(draws.tolist()) == {10.0, 20.0}
    assert bootstrap([_const(10.0, 1)], "median_ttft_ms", np.random.default_rng(9),
                     50, block).tolist() == [10.0] * 50
    none = Repeat(ttft=np.empty(0), ttft_text=np.empty(0), tpot=np.empty(0),
                  tpot_text=np.empty(0), itl=[np.empty(0)], output_throughput=None)
    assert np.isnan(bootstrap([none], "median_itl_ms", np.random.default_rng(9), 5,
                              block)).all()


def test_throughput_resamples_skip_repeats_without_one() -> None:
    """Five repeats, four without a throughput: a resample holding the one (even once) has
    its value; one holding none has none (a third of them, 0.8⁵)."""
    repeats = [_const(1.0, 3, tput=100.0)] + [_const(1.0, 3, tput=None)] * 4
    draws = bootstrap(repeats, "output_throughput", np.random.default_rng(10), 2000)
    finite = draws[np.isfinite(draws)]
    assert set(finite.tolist()) == {100.0}
    assert 0.6 < finite.size / draws.size < 0.74


def test_both_paths_give_the_same_intervals() -> None:
    """The block path and the one-at-a-time path draw the same distribution: the bounds of a
    run's figures agree within the resampling's own noise (a tenth of the interval)."""
    runs = [_repeat(np.random.default_rng(k), 80 + 10 * k, 1 + 0.05 * k) for k in range(3)]
    for figure in ("median_ttft_ms", "p99_tpot_ms", "median_itl_ms"):
        block = _bounds(bootstrap(runs, figure, np.random.default_rng(1), 2000))
        loop = _bounds(bootstrap(runs, figure, np.random.default_rng(1), 2000, 1))
        assert block is not None and loop is not None
        width = block[1] - block[0]
        assert abs(block[0] - loop[0]) < 0.1 * width and abs(block[1] - loop[1]) < 0.1 * width


def test_ragged_or_large_units_go_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """ITL of one request of 100 gaps and twenty of one would pad to mostly NaN (2,100 cells
    for 120 gaps): drawn one resample at a time instead, as many values as each draws."""
    rep = Repeat(ttft=np.ones(21), ttft_text=np.ones(21), tpot=np.empty(0),
                 tpot_text=np.empty(0), itl=[np.full(100, 10.0)] + [np.array([20.0])] * 20,
                 output_throughput=None)
    def no_padding(*args: object) -> None:
        raise AssertionError("padded")

    monkeypatch.setattr("benchlib.measure.stats._intervals._padded", no_padding)
    draws = bootstrap([rep], "median_itl_ms", np.random.default_rng(3), 200)
    assert set(draws.tolist()) <= {10.0, 15.0, 20.0} and np.isfinite(draws).all()
    with pytest.raises(AssertionError, match="padded"):  # even units pad
        bootstrap([_const(10.0, 5)], "median_itl_ms", np.random.default_rng(3), 10)


def test_units_at_the_limits_still_pad(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four cells a value (one request of four gaps beside three of none), and a resample
    exactly as large as the block allows, are drawn padded, a block at a time."""
    def no_loop(*args: object) -> None:
        raise AssertionError("one at a time")

    monkeypatch.setattr("benchlib.measure.stats._intervals._one_at_a_time", no_loop)
    rep = Repeat(ttft=np.ones(4), ttft_text=np.ones(4), tpot=np.empty(0),
                 tpot_text=np.empty(0), itl=[np.full(4, 10.0)] + [np.empty(0)] * 3,
                 output_throughput=None)
    draws = bootstrap([rep], "median_itl_ms", np.random.default_rng(4), 20, 16)
    assert set(draws[np.isfinite(draws)].tolist()) == {10.0}
