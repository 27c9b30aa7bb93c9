"""What one request produced on the wire (:class:`StreamCapture`), and the words for a
transport failure a user can act on.

Filled by :class:`~benchlib.measure.wire._connection.Connection`'s reader callback, interpreted by
:mod:`benchlib.measure.wire._timing` and :mod:`benchlib.measure.wire._request`; kept apart so the
connection module holds only the I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["StreamCapture", "closed_message", "os_error_message"]


@dataclass(slots=True)
class StreamCapture:
    """Everything one request produced on the wire, before any interpretation.

    ``events`` holds ``(arrival_ns, payload)`` for every SSE event, arrival on the
    ``perf_counter_ns`` clock. ``body`` holds a non-event-stream body (an error page, a JSON
    answer where a stream was asked for). ``error`` names a transport failure.
    """

    start_ns: int = 0
    end_ns: int = 0
    status: int | None = None
    content_type: str = ""
    #: the response said it came from benchlib's scripted server (x-benchlib-synthetic)
    synthetic: bool = False
    events: list[tuple[int, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    saw_done: bool = False
    complete: bool = False
    error: str | None = None
    kernel_clock: bool = False
    #: every read of the response, in order: its arrival time (the kernel stamp, mapped and
    #: clamped to [start, read], or the read time itself where the read had no stamp) and
    #: when Python read it; a read's arrival is the newest segment it returned
    read_times: list[int] = field(default_factory=list)
    read_user: list[int] = field(default_factory=list)
    read_stamped: list[bool] = field(default_factory=list)
    #: reads whose stamp fell outside [start, read] and was clamped (a clock step)
    clamped_reads: int = 0
    #: per event: the read that completed it, and whether its last byte was that read's
    #: last byte (then the read's stamp is its exact arrival, else only an upper bound)
    event_read: list[int] = field(default_factory=list)
    event_exact: list[bool] = field(default_factory=list)
    #: the realtime→monotonic offset at the request's end minus at its start: a clock step
    #: (NTP, ``makestep``) in between moves kernel stamps, so a large drift is flagged
    clock_drift_ns: int = 0


def closed_message(capture: StreamCapture | None) -> str:
    """A close (FIN, ``close_notify``) as when it came: before the response or inside it."""
    if capture is None or capture.status is None:
        return "connection closed by the server before responding"
    return "connection closed by the server mid-response"


def os_error_message(exc: OSError, capture: StreamCapture | None, sending: bool = False
                     ) -> str:
    """A socket error as the cause a user can act on: reset, closed, or the OS's words."""
    if isinstance(exc, ConnectionResetError):
        when = ("before responding" if capture is None or capture.status is None
                else "mid-response")
        return f"connection reset by the server {when}"
    if isinstance(exc, BrokenPipeError) and sending:
        return "connection closed by the server while the request was being sent"
    return f"connection error: {exc.strerror or exc}"
