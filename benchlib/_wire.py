"""Kernel receive timestamps: when bytes reached the socket, not when Python looked.

On Linux a socket with ``SO_TIMESTAMPNS`` gets, with every ``recvmsg``, the time the kernel
queued the newest segment it returned. That time does not depend on how busy the event loop
was, so arrival times measured this way stay on the wire's truth at high concurrency. The
kernel stamps ``CLOCK_REALTIME``; :class:`ClockMap` moves stamps onto ``time.perf_counter_ns``
(``CLOCK_MONOTONIC``), the clock every duration in benchlib is taken with. Where the option is
missing (other systems) reads are stamped in user space and the run says so.

Both the measuring client and the scripted server use this module.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import sys
import time
from dataclasses import dataclass

__all__ = ["ANC_BUFSIZE", "ClockMap", "enable_rx_timestamps", "rx_timestamp_ns", "send_whole"]

#: ``SO_TIMESTAMPNS`` (``SO_TIMESTAMPNS_OLD``) and its control message type on Linux; Python's
#: socket module does not export them.
_SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")
#: Ancillary buffer size for one timespec control message.
ANC_BUFSIZE = socket.CMSG_SPACE(_TIMESPEC.size)


def enable_rx_timestamps(sock: socket.socket) -> bool:
    """Ask the kernel to stamp arrivals on ``sock``; return whether it agreed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def rx_timestamp_ns(ancdata: list[tuple[int, int, bytes]]) -> int | None:
    """The ``CLOCK_REALTIME`` arrival stamp in a ``recvmsg`` ancillary list, or ``None``."""
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            return int(sec) * 1_000_000_000 + int(nsec)
    return None


@dataclass(frozen=True, slots=True)
class ClockMap:
    """The offset between ``time.time_ns`` and ``time.perf_counter_ns`` at one moment.

    Taken as the tightest of a few back-to-back reads, so its error is well under a
    microsecond; taken afresh per request, so clock slewing over a long run does not add up.
    """

    offset_ns: int

    @classmethod
    def now(cls, tries: int = 3) -> ClockMap:
        best_gap = None
        best = 0
        for _ in range(tries):
            p0 = time.perf_counter_ns()
            r = time.time_ns()
            p1 = time.perf_counter_ns()
            gap = p1 - p0
            if best_gap is None or gap < best_gap:
                best_gap = gap
                best = r - (p0 + p1) // 2
        return cls(best)

    def to_perf_ns(self, realtime_ns: int) -> int:
        """Map a kernel ``CLOCK_REALTIME`` stamp onto the ``perf_counter_ns`` clock."""
        return realtime_ns - self.offset_ns


async def send_whole(loop: asyncio.AbstractEventLoop, sock: socket.socket, data: bytes) -> None:
    """Send all of ``data`` on a non-blocking socket: one ``send`` straight away (the common
    case: the kernel takes it whole, no event-loop round trip), the rest when it can."""
    try:
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    if sent < len(data):
        await loop.sock_sendall(sock, memoryview(data)[sent:])
