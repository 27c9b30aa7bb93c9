"""How far each arrival time can be trusted: per-event bounds and the run's timing self-check.

A ``recvmsg`` returns every byte queued on the socket, and its kernel stamp is the arrival of
the *newest* segment among them (:mod:`benchlib._wire`). So an SSE event's stamp is exact only
when the event's last byte is the last byte of the read that carried it; when a later event's
bytes came in the same read (the client read late, or the server sent two events at once) the
stamp is only an upper bound, and the previous read's stamp (or the send, for the first read)
is a lower bound: bytes not in that read reached the socket after its newest segment.

Reads without a kernel stamp (other systems, or a socket that refused the option) are timed
when Python read them: an upper bound too, with the previous read as the lower bound. A clock
step between the request's start and end (NTP ``makestep``; kernel stamps are
``CLOCK_REALTIME``) is caught by re-taking the realtime→monotonic offset at the end, and by
stamps that fall outside [send, read]: such a request is timed from its read times instead,
and flagged.

The run's ``timing`` block says which clock timed it, how many TTFTs are exact, how wide the
bounds are, how late the client read the sockets, and whether the client — not the server —
limited the accuracy (``client_bound``), with what to do about it.

A late read does not move a kernel stamp: it only merges events into one read, and what that
costs is already in each request's bounds. So ``client_bound`` is judged on the figures, not
on the lag alone: each headline figure (mean, median and p99 of TTFT, TTFT to the first text,
TPOT and E2EL) is computed on every request's lower and on its upper bound, and the spread,
as a share of the figure, is how far the late reads could have moved it. A run is
``client_bound`` when its reads lagged over ``CLIENT_LAG_MS`` at the 99th percentile *and* a
figure could move by more than ``CLIENT_BOUND_SHARE`` (1 %): ``client_bound_figures`` names
them with their shares. A run whose every TTFT is an exact stamp is not flagged for a lag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from benchlib.measure.wire._connection import StreamCapture

__all__ = ["CLIENT_BOUND_SHARE", "CLIENT_LAG_MS", "EventTimes", "FigureBounds", "Timing",
           "event_times", "figure_shares", "timing_summary"]

#: a read more than this late (user-space read − kernel stamp) at the 99th percentile means
#: the client, not the server, set the accuracy: events coalesce into one read from there on
CLIENT_LAG_MS = 1.0
#: a figure whose per-request bounds let it move by more than this share of itself is one
#: the late reads could distort (with the lag over CLIENT_LAG_MS: client_bound)
CLIENT_BOUND_SHARE = 0.01
#: offset drift tolerated between a request's start and end before it counts as a clock step:
#: the measuring error of the offset plus NTP's maximum slew (500 ppm) over the request
_STEP_TOLERANCE_NS = 1_000_000
_MAX_SLEW = 500e-6
_MS = 1e6

ClockKind = Literal["kernel", "userspace"]


@dataclass(slots=True)
class EventTimes:
    """Per SSE event of one capture: arrival (upper bound), lower bound, exactness, read."""

    upper: list[int] = field(default_factory=list)
    lower: list[int] = field(default_factory=list)
    exact: list[bool] = field(default_factory=list)
    read: list[int] = field(default_factory=list)
    #: the clock the upper bounds come from
    clock: ClockKind = "userspace"
    #: the offset moved or stamps fell outside [send, read]: times are the read times
    clock_stepped: bool = False
    #: user-space read time − kernel stamp, per stamped read (ns)
    read_lags: list[int] = field(default_factory=list)
    reads: int = 0
    stamped_reads: int = 0


def _stepped(capture: StreamCapture) -> bool:
    span = max(0, (capture.end_ns or capture.start_ns) - capture.start_ns)
    allowed = _STEP_TOLERANCE_NS + _MAX_SLEW * span
    return capture.clamped_reads > 0 or abs(capture.clock_drift_ns) > allowed


def event_times(capture: StreamCapture) -> EventTimes:
    """The bounds of every event's arrival in ``capture`` (see the module docstring).

    A capture built without read records (tests, other producers) has one read per event,
    each exact at its recorded time.
    """
    n = len(capture.events)
    out = EventTimes()
    if len(capture.event_read) != n or len(capture.read_times) == 0:
        out.upper = [t for t, _ in capture.events]
        out.lower = list(out.upper)
        out.exact = [True] * n
        out.read = list(range(n))
        out.clock = "kernel" if capture.kernel_clock else "userspace"
        return out
    stamped = capture.read_stamped
    out.reads = len(capture.read_times)
    out.stamped_reads = sum(stamped)
    out.clock_stepped = out.stamped_reads > 0 and _stepped(capture)
    use_kernel = out.stamped_reads == out.reads and not out.clock_stepped
    times = capture.read_times if not out.clock_stepped else capture.read_user
    out.clock = "kernel" if use_kernel else "userspace"
    if not out.clock_stepped:
        out.read_lags = [u - t for t, u, s in zip(capture.read_times, capture.read_user, stamped,
                                                  strict=True) if s]
    for e in range(n):
        r = capture.event_read[e]
        upper = times[r]
        exact = capture.event_exact[e] and stamped[r] and not out.clock_stepped
        out.upper.append(upper)
        out.lower.append(upper if exact else (times[r - 1] if r > 0 else capture.start_ns))
        out.exact.append(exact)
        out.read.append(r)
    return out


#: per metric (``ttft``, ``ttft_text``, ``tpot``, ``e2el``): each request's value (the
#: reported one, ms), its lower and its upper bound
FigureBounds = Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float]]]
_FIGURE_STATS = (("mean", np.mean), ("median", np.median),
                 ("p99", lambda a: np.percentile(a, 99)))


def figure_shares(bounds: FigureBounds) -> dict[str, float]:
    """How far each headline figure could move within its requests' bounds, as a share of the
    figure: ``(stat(upper) − stat(lower)) / |stat(value)|`` for mean, median and p99 (each is
    monotone in every request's value, so the true figure lies between the two). Keyed as the
    result keys them (``median_ttft_ms``); a figure of 0 or of no request is left out."""
    out: dict[str, float] = {}
    for metric, (values, lower, upper) in bounds.items():
        if not values:
            continue
        v, lo, hi = (np.asarray(x, dtype=np.float64) for x in (values, lower, upper))
        for name, fn in _FIGURE_STATS:
            figure = float(fn(v))
            if figure != 0.0:
                out[f"{name}_{metric}_ms"] = float(fn(hi) - fn(lo)) / abs(figure)
    return out


def _pct(values: Sequence[float], p: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=np.float64), p)) if values else None


class Timing(BaseModel):
    """The result's ``timing`` block: how far this run's times can be trusted.

    Over successful requests; ``null`` where there was nothing to measure.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    clock: Literal["kernel", "userspace", "mixed", "none"] = Field(
        description="what timed the requests: kernel receive stamps on every read, the time "
                    "Python read the bytes, a mix of both, or none (no request succeeded)")
    stamped_read_fraction: float | None = Field(
        description="reads that carried a kernel receive stamp, as a fraction of all reads")
    exact_ttft_fraction: float | None = Field(
        description="TTFTs (to the first text) that are exact stamps rather than upper bounds")
    p50_ttft_uncertainty_ms: float | None = Field(
        description="median TTFT bound width: upper − lower bound of the first text's arrival")
    p99_ttft_uncertainty_ms: float | None = Field(
        description="99th percentile of that width")
    max_ttft_uncertainty_ms: float | None = Field(description="largest such width")
    p99_read_lag_ms: float | None = Field(
        description="99th percentile of when Python read the bytes − when they arrived "
                    "(stamped reads): how late the client read its sockets")
    client_bound: bool | None = Field(
        description="p99_read_lag_ms exceeded client_lag_limit_ms and the events its late "
                    "reads merged left a headline figure free to move by more than "
                    "client_bound_share_limit of itself (client_bound_figures): the client, "
                    "not the server, limited the accuracy; run fewer streams per process")
    client_lag_limit_ms: float = Field(
        description="the read lag above which a run can count as client_bound")
    client_bound_share_limit: float = Field(
        CLIENT_BOUND_SHARE, description="the share of a figure its bounds may span before a "
                                        "lagging run counts as client_bound")
    figure_bound_shares: dict[str, float] | None = Field(
        None, description="per headline figure (mean, median, p99 of ttft, ttft_text, tpot, "
                          "e2el; keyed as the result keys them): (figure over the requests' "
                          "upper bounds − over their lower bounds) / figure, how far merged "
                          "reads could have moved it; 0 where every time is exact")
    client_bound_figures: dict[str, float] = Field(
        default_factory=dict,
        description="the figures that make the run client_bound, with their shares: over "
                    "client_bound_share_limit, in a run whose reads lagged over "
                    "client_lag_limit_ms; empty when not client_bound")
    coalesced_gaps: int = Field(
        description="gaps between text events that one read delivered together, over all "
                    "successful requests (not measured, not reported as ITLs)")
    clock_stepped_requests: int = Field(
        description="requests, failed ones too, during which a realtime clock step was caught "
                    "(timed from read times instead)")
    p99_release_lag_ms: float | None = Field(
        None, description="99th percentile of release − due instant over every scheduled "
                          "request: how late the client released requests against the seeded "
                          "arrival schedule (a busy event loop, a late start); the arrival "
                          "pattern the server saw differs by this much. Does not touch TTFT, "
                          "which starts at the send")
    max_release_lag_ms: float | None = Field(None, description="largest such lag")


def timing_summary(ttft_bounds: Sequence[tuple[int, int, bool]], clocks: Sequence[ClockKind],
                   stepped: int, read_lags_ns: Sequence[int], reads: int, stamped_reads: int,
                   coalesced_gaps: int, release_lags_ns: Sequence[int] = (),
                   figure_bounds: FigureBounds | None = None) -> Timing:
    """The run's ``timing`` block.

    ``ttft_bounds`` holds ``(upper_ns, lower_ns, exact)`` of each successful request's first
    text event; ``clocks`` the clock each successful request was timed with;
    ``release_lags_ns`` how late each scheduled request was released; ``figure_bounds`` the
    per-request values and bounds the headline figures are judged on (none given: judged on
    the first text's TTFT bounds alone).
    """
    release_ms = [g / _MS for g in release_lags_ns]
    kinds = set(clocks)
    clock: Literal["kernel", "userspace", "mixed", "none"] = (
        "mixed" if len(kinds) > 1 else (kinds.pop() if kinds else "none"))
    widths = [(u - lo) / _MS for u, lo, _ in ttft_bounds]
    lags_ms = [g / _MS for g in read_lags_ns]
    p99_lag = _pct(lags_ms, 99)
    if figure_bounds is None:
        figure_bounds = {"ttft_text": ([u / _MS for u, _, _ in ttft_bounds],
                                       [lo / _MS for _, lo, _ in ttft_bounds],
                                       [u / _MS for u, _, _ in ttft_bounds])}
    shares = figure_shares(figure_bounds)
    lagged = p99_lag is not None and p99_lag > CLIENT_LAG_MS
    over = {k: v for k, v in shares.items() if v > CLIENT_BOUND_SHARE} if lagged else {}
    client_bound: bool | None = None if p99_lag is None else bool(over)
    return Timing(
        clock=clock,
        stamped_read_fraction=stamped_reads / reads if reads else None,
        exact_ttft_fraction=(sum(e for _, _, e in ttft_bounds) / len(ttft_bounds)
                             if ttft_bounds else None),
        p50_ttft_uncertainty_ms=_pct(widths, 50),
        p99_ttft_uncertainty_ms=_pct(widths, 99),
        max_ttft_uncertainty_ms=max(widths) if widths else None,
        p99_read_lag_ms=p99_lag,
        client_bound=client_bound,
        client_lag_limit_ms=CLIENT_LAG_MS,
        figure_bound_shares=shares or None,
        client_bound_figures=over,
        coalesced_gaps=coalesced_gaps,
        clock_stepped_requests=stepped,
        p99_release_lag_ms=_pct(release_ms, 99),
        max_release_lag_ms=max(release_ms) if release_ms else None,
    )
