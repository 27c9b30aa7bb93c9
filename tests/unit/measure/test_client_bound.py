"""``client_bound`` is judged against what it can distort: a lagging client is flagged only
when the events its late reads merged leave a headline figure free to move by more than 1 %
of itself within the requests' bounds, and the result says which figures and by how much."""

from __future__ import annotations

import pytest

from benchlib.measure.stats._metrics import _figure_bounds
from benchlib.measure.wire._request import RequestOutcome
from benchlib.measure.wire._timing import CLIENT_BOUND_SHARE, figure_shares, timing_summary

MS = 1_000_000


def _timing(ttft_ms: list[float], lower_ms: list[float], lag_ms: float) -> dict[str, object]:
    bounds = [(int(u * MS), int(lo * MS), u == lo) for u, lo in zip(ttft_ms, lower_ms,
                                                                    strict=True)]
    lags = [int(lag_ms * MS)] * 200
    return timing_summary(bounds, ["kernel"] * len(bounds), 0, lags, 200, 200, 0).model_dump()


def test_the_h200_c16_row_is_not_flagged_for_a_lag_that_moves_nothing() -> None:
    """The H200 llama.cpp run's c=16 rows: 1.1 ms p99 read lag, 719 ms median TTFT, every
    TTFT an exact stamp: the lag cannot move a figure, so no caveat."""
    ttft = [700.0 + 2.5 * i for i in range(16)]
    t = _timing(ttft, ttft, lag_ms=1.1)
    assert t["p99_read_lag_ms"] == pytest.approx(1.1)
    assert t["client_bound"] is False and t["client_bound_figures"] == {}
    assert t["figure_bound_shares"] == {"mean_ttft_text_ms": 0.0, "median_ttft_text_ms": 0.0,
                                        "p99_ttft_text_ms": 0.0}


def test_merged_reads_that_can_move_a_figure_flag_it_with_its_share() -> None:
    ttft = [50.0] * 10
    lower = [30.0] * 10  # each first text shared its read: 20 ms of 50 unresolved
    t = _timing(ttft, lower, lag_ms=3.0)
    assert t["client_bound"] is True
    assert t["client_bound_figures"] == pytest.approx({"mean_ttft_text_ms": 0.4,
                                                       "median_ttft_text_ms": 0.4,
                                                       "p99_ttft_text_ms": 0.4})


def test_a_spread_under_the_share_or_a_prompt_client_is_not_flagged() -> None:
    ttft = [500.0] * 10
    under = [500.0 - 0.99 * CLIENT_BOUND_SHARE * 500.0] * 10
    assert _timing(ttft, under, lag_ms=5.0)["client_bound"] is False
    over = [500.0 - 1.01 * CLIENT_BOUND_SHARE * 500.0] * 10
    assert _timing(ttft, over, lag_ms=5.0)["client_bound"] is True
    # bounds wide, reads prompt: the server sent events together, not the client's doing
    assert _timing(ttft, [250.0] * 10, lag_ms=0.5)["client_bound"] is False


def test_shares_span_the_statistic_between_lower_and_upper_bounds() -> None:
    shares = figure_shares({"e2el": ([100.0, 200.0, 300.0], [90.0, 200.0, 300.0],
                                     [100.0, 200.0, 300.0])})
    assert shares["mean_e2el_ms"] == pytest.approx((10 / 3) / 200)
    assert shares["median_e2el_ms"] == 0.0


def test_tpot_and_e2el_take_their_bounds_from_the_first_and_last_events() -> None:
    o = RequestOutcome(index=0, prompt_len=1, start_ns=0, success=True, ttft_ns=20 * MS,
                       ttft_lower_ns=10 * MS, latency_ns=120 * MS, latency_lower_ns=110 * MS,
                       ttft_text_ns=20 * MS, ttft_text_lower_ns=10 * MS, output_tokens=11)
    got = _figure_bounds([o])
    assert got["tpot"] == ([10.0], [9.0], [11.0])
    assert got["e2el"] == ([120.0], [110.0], [120.0])
    assert got["ttft"] == got["ttft_text"] == ([20.0], [10.0], [20.0])
