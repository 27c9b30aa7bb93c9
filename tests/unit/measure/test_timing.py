"""The timing rules of :mod:`benchlib.measure.wire._timing`, each on a capture or bounds built
for it: a capture without read records, what counts as a clock step, which clock a run is
timed with, and the limits of ``client_bound`` taken at their exact values.

The rules' effect on whole requests (TTFT bounds, a step's fallback to read times) is held in
test_request.py, ``client_bound``'s meaning in test_client_bound.py; here the edges."""

from __future__ import annotations

import pytest

from benchlib.measure.wire._capture import StreamCapture
from benchlib.measure.wire._timing import (
    CLIENT_BOUND_SHARE,
    CLIENT_LAG_MS,
    ClockKind,
    Timing,
    event_times,
    figure_shares,
    timing_summary,
)

MS = 1_000_000
#: a perf_counter reading an hour after boot: a request's instants are large numbers
HOUR_NS = 3_600_000 * MS


def _stamped(reads_ms: list[float], *, stamped: bool = True, duration_ms: float | None = None,
             drift_ns: int = 0, clamped: int = 0) -> StreamCapture:
    """A capture sent at HOUR_NS whose reads arrived ``reads_ms`` after the send (read by
    Python 1 ms later), one event per read ending it, over ``duration_ms`` (else to the
    last read)."""
    cap = StreamCapture(start_ns=HOUR_NS, kernel_clock=stamped, clock_drift_ns=drift_ns,
                        clamped_reads=clamped)
    for r, t in enumerate(reads_ms):
        cap.read_times.append(HOUR_NS + int(t * MS))
        cap.read_user.append(HOUR_NS + int((t + 1) * MS))
        cap.read_stamped.append(stamped)
        cap.events.append((cap.read_times[-1], b"{}"))
        cap.event_read.append(r)
        cap.event_exact.append(True)
    last = reads_ms[-1] if duration_ms is None else duration_ms
    cap.end_ns = HOUR_NS + int(last * MS)
    return cap


@pytest.mark.parametrize("kernel", [True, False])
def test_a_capture_without_read_records_has_one_exact_read_per_event(kernel: bool) -> None:
    """Another producer's capture (events and their times only) is taken at its word: each
    event its own read, exact at its time, on the clock the capture names."""
    cap = StreamCapture(start_ns=5 * MS, kernel_clock=kernel,
                        events=[(7 * MS, b"a"), (9 * MS, b"b"), (12 * MS, b"c")])
    times = event_times(cap)
    assert times.upper == times.lower == [7 * MS, 9 * MS, 12 * MS]
    assert times.exact == [True, True, True] and times.read == [0, 1, 2]
    assert times.clock == ("kernel" if kernel else "userspace")
    assert not times.clock_stepped and times.reads == times.stamped_reads == 0


def test_read_records_that_do_not_cover_every_event_are_not_used() -> None:
    """Events without the read that completed each (``event_read`` shorter than the events)
    or reads without a time are not matched up: the events' own times are used."""
    partial = _stamped([10.0, 20.0])
    partial.events.append((HOUR_NS + 25 * MS, b"late"))
    assert event_times(partial).upper == [HOUR_NS + 10 * MS, HOUR_NS + 20 * MS,
                                          HOUR_NS + 25 * MS]
    no_times = _stamped([10.0, 20.0])
    no_times.read_times.clear()
    assert event_times(no_times).exact == [True, True]


def test_a_drift_within_ntp_slew_over_a_long_request_is_no_clock_step() -> None:
    """The offset may slew 500 ppm: over a 10 s request 3 ms of drift is a slew (the 1 ms
    tolerance plus 5 ms), but the same 3 ms over a 30 ms request is a step."""
    assert not event_times(_stamped([10.0, 20.0], duration_ms=10_000.0,
                                    drift_ns=3 * MS)).clock_stepped
    assert not event_times(_stamped([10.0, 20.0], duration_ms=10_000.0,
                                    drift_ns=-3 * MS)).clock_stepped
    assert event_times(_stamped([10.0, 20.0], duration_ms=30.0, drift_ns=3 * MS)).clock_stepped
    assert event_times(_stamped([10.0, 20.0], duration_ms=30.0, drift_ns=-3 * MS)).clock_stepped


def test_a_drift_of_exactly_the_tolerance_is_no_step_and_one_more_ns_is() -> None:
    cap = _stamped([10.0], drift_ns=1 * MS)
    cap.end_ns = 0  # no end recorded: no slew allowed, the tolerance alone
    assert not event_times(cap).clock_stepped
    cap.clock_drift_ns += 1
    assert event_times(cap).clock_stepped


def test_one_clamped_read_is_a_clock_step() -> None:
    times = event_times(_stamped([10.0, 20.0], clamped=1))
    assert times.clock_stepped and times.clock == "userspace"
    assert times.upper == [HOUR_NS + 11 * MS, HOUR_NS + 21 * MS]  # the read times


def test_a_single_stamped_read_can_show_a_step() -> None:
    assert event_times(_stamped([10.0], drift_ns=50 * MS)).clock_stepped


def test_reads_without_stamps_are_never_flagged_as_stepped() -> None:
    """A step moves kernel stamps only: unstamped reads are read times already."""
    times = event_times(_stamped([10.0, 20.0], stamped=False, drift_ns=50 * MS, clamped=1))
    assert not times.clock_stepped and times.clock == "userspace"
    assert times.read_lags == [] and times.stamped_reads == 0 and times.reads == 2


def test_an_empty_metric_leaves_the_others_judged() -> None:
    shares = figure_shares({"ttft": ([], [], []), "e2el": ([100.0], [90.0], [100.0])})
    assert shares == pytest.approx({"mean_e2el_ms": 0.1, "median_e2el_ms": 0.1,
                                    "p99_e2el_ms": 0.1})


def _summary(clocks: list[ClockKind], lag_ms: float = 0.0, ttft_ms: float = 100.0,
             lower_ms: float = 100.0) -> Timing:
    bounds = [(int(ttft_ms * MS), int(lower_ms * MS), ttft_ms == lower_ms)] * len(clocks)
    return timing_summary(bounds, clocks, 0, [int(lag_ms * MS)] * 4, 4, 4, 0)


def test_the_run_clock_is_the_requests_one_mixed_or_none() -> None:
    assert _summary(["kernel", "kernel"]).clock == "kernel"
    assert _summary(["userspace"]).clock == "userspace"
    assert _summary(["kernel", "userspace", "kernel"]).clock == "mixed"
    assert _summary([]).clock == "none"


def test_a_lag_of_exactly_the_limit_is_not_client_bound() -> None:
    wide = {"ttft_ms": 100.0, "lower_ms": 50.0}
    assert _summary(["kernel"], lag_ms=CLIENT_LAG_MS, **wide).client_bound is False
    assert _summary(["kernel"], lag_ms=CLIENT_LAG_MS + 0.001, **wide).client_bound is True


def test_a_share_of_exactly_the_limit_is_not_client_bound() -> None:
    assert CLIENT_BOUND_SHARE == 0.01  # 1 ms of 100 ms below
    at = _summary(["kernel"], lag_ms=5.0, ttft_ms=100.0, lower_ms=99.0)
    assert at.figure_bound_shares == {"mean_ttft_text_ms": 0.01, "median_ttft_text_ms": 0.01,
                                      "p99_ttft_text_ms": 0.01}
    assert at.client_bound is False and at.client_bound_figures == {}
    assert _summary(["kernel"], lag_ms=5.0, ttft_ms=100.0, lower_ms=98.9).client_bound is True
