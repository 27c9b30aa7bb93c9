"""One accepted connection of the scripted server: kernel-stamped reads, whole-chunk writes
that report when the kernel had the bytes (the truth file's times), and the exception that
leaves a connection mid-response (a fault).

Over TLS the same holds, by the same means as the client's (:mod:`benchlib._tls`): reads are
``recvmsg`` of ciphertext, stamped, then decrypted in memory; a write is encrypted first and
its times are those of the socket ``send`` of the ciphertext (one record per chunk), so the
truth stays the wire's.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time

import h11

from benchlib._exceptions import Hangup
from benchlib._tls import TlsChannel
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


class Peer:
    """One accepted connection: stamped reads and whole-chunk writes (``tls``: the server's
    context; :meth:`handshake` must run first)."""

    def __init__(self, sock: socket.socket, tls: ssl.SSLContext | None = None) -> None:
        self.sock = sock
        self._tls = TlsChannel(tls, server_side=True) if tls is not None else None
        self.loop = asyncio.get_running_loop()
        self.kernel_clock = enable_rx_timestamps(sock)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=1 << 24)
        self.chunked = False
        self.last_send_begin_ns = 0
        #: when the handshake's last read arrived (the request may have come with it)
        self._handshake_arrival = 0

    async def handshake(self, timeout: float) -> None:
        """The TLS handshake, if this is a TLS connection (raises ``OSError``s: ``SSLError``
        when the client refuses the certificate, ``TimeoutError``)."""
        if self._tls is not None:
            await self._tls.handshake(self.loop, self.sock, timeout, self._handshake_recv)

    async def _handshake_recv(self) -> bytes:
        data, self._handshake_arrival = await self._recv_raw()
        return data

    def close(self, notify: bool) -> None:
        """Close the socket; ``notify``: end a TLS session with ``close_notify`` first (an
        orderly close, not a cut)."""
        if notify and self._tls is not None:
            self._tls.close_notify(self.sock)
        self.sock.close()

    async def recv(self) -> tuple[bytes, int]:
        """Next bytes from the client and the perf_counter_ns time they arrived (``b""``: the
        client closed). Over TLS: the next plaintext, and when the first of the reads that
        brought it arrived (a request that came with the handshake: that read's)."""
        if self._tls is None:
            return await self._recv_raw()
        early = self._tls.buffered()
        if early:
            return early, self._handshake_arrival
        first: int | None = None
        while not self._tls.closed:
            data, arrival = await self._recv_raw()
            first = first or arrival
            out = self._tls.decrypt(data)  # a broken record: ssl.SSLError, an OSError
            if out.head or out.last or out.closed:
                return out.head + out.last, first
        return b"", first or time.perf_counter_ns()

    async def _recv_raw(self) -> tuple[bytes, int]:
        """The next bytes on the socket (ciphertext over TLS) and their kernel stamp."""
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
        socket between the two). Over TLS ``data`` is encrypted before the clock starts."""
        if self._tls is not None:
            data = self._tls.encrypt(data)
        self.last_send_begin_ns = time.perf_counter_ns()
        await send_whole(self.loop, self.sock, data)
        return time.perf_counter_ns()


