"""One accepted connection of the scripted server: kernel-stamped reads, whole-chunk writes
that report when the kernel had the bytes (the truth file's times), and the exception that
leaves a connection mid-response (a fault)."""

from __future__ import annotations

import asyncio
import socket
import time

import h11

from benchlib._wire import (
    ANC_BUFSIZE,
    ClockMap,
    enable_rx_timestamps,
    rx_timestamp_ns,
    send_whole,
)

__all__ = ["Hangup", "Peer"]


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Hangup(Exception):
    """Leave the connection now, without finishing the response (``reset``: with an RST)."""

    def __init__(self, reset: bool) -> None:
        super().__init__("reset" if reset else "close")
        self.reset = reset


class Peer:
    """One accepted connection: stamped reads and whole-chunk writes."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.loop = asyncio.get_running_loop()
        self.kernel_clock = enable_rx_timestamps(sock)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=1 << 24)
        self.chunked = False
        self.last_send_begin_ns = 0

    async def recv(self) -> tuple[bytes, int]:
        """Next bytes from the client and the perf_counter_ns time they arrived."""
        while True:
            clock = ClockMap.now()
            try:
                data, anc, _, _ = self.sock.recvmsg(1 << 16, ANC_BUFSIZE)
            except (BlockingIOError, InterruptedError):
                fut: asyncio.Future[None] = self.loop.create_future()
                self.loop.add_reader(self.sock.fileno(), _wake, fut)
                try:
                    await fut
                finally:
                    self.loop.remove_reader(self.sock.fileno())
                continue
            stamp = rx_timestamp_ns(anc) if self.kernel_clock else None
            return data, clock.to_perf_ns(stamp) if stamp is not None else time.perf_counter_ns()

    async def write(self, event: h11.Data | h11.Response | h11.EndOfMessage) -> int:
        """Write one h11 event; return perf_counter_ns when the kernel had all of it."""
        data = self.h11.send(event) or b""
        if isinstance(event, h11.Response):
            # the hot path frames body chunks itself when h11 chose chunked (HTTP/1.1)
            self.chunked = b"transfer-encoding: chunked" in data.lower()
        return await self.send(data)

    async def event(self, payload: bytes) -> int:
        """Write one SSE event (``data: payload``) as one body chunk; return when the kernel
        had all of it. Chunked framing is written here rather than by ``h11.send`` (which
        adds nothing for chunked bodies but costs as much as the rest of the chunk)."""
        data = b"data: " + payload + b"\n\n"
        if self.chunked:
            return await self.send(b"%x\r\n%b\r\n" % (len(data), data))
        return await self.write(h11.Data(data=data))

    async def send(self, data: bytes) -> int:
        """Send ``data`` whole; return perf_counter_ns when the kernel had all of it (and keep
        when the send began in :attr:`last_send_begin_ns`: the bytes reached the client's
        socket between the two)."""
        self.last_send_begin_ns = time.perf_counter_ns()
        await send_whole(self.loop, self.sock, data)
        return time.perf_counter_ns()


