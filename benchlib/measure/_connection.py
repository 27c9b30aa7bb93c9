"""A keep-alive HTTP/1.1 connection that streams one response at a time, stamping arrivals.

Why not aiohttp or httpx: they read sockets with ``recv`` inside their transports, so the only
time they can offer is when Python got round to the bytes. Here the socket is read with
``recvmsg`` straight from the event loop's readiness callback, and every read carries the
kernel's arrival stamp (see :mod:`benchlib._wire`). HTTP framing is h11's (sans-I/O, well
kept); SSE framing is :class:`~benchlib.measure._sse.SSEDecoder`. Per read the callback does
the least it can: stamp, unframe, and append ``(arrival_ns, payload)``; JSON is decoded after
the request ends.

The clock of a request starts immediately before its bytes are handed to the socket: building
the request, waiting for a free connection or for the event loop are not counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import h11

from benchlib._wire import ANC_BUFSIZE, ClockMap, enable_rx_timestamps, rx_timestamp_ns
from benchlib.measure._sse import SSEDecoder

__all__ = ["Connection", "ConnectionPool", "Endpoint", "StreamCapture"]

_RECV_BUFSIZE = 1 << 18


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where requests go: host, port and the URL path prefix of an ``http://`` base URL."""

    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, base_url: str) -> Endpoint:
        """Parse ``http://host:port[/prefix]``; a trailing ``/v1`` is kept as the prefix."""
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"expected http://HOST[:PORT][/PATH], got {base_url!r}")
        return cls(parts.hostname, parts.port or 80, parts.path.rstrip("/"))

    def path(self, api_path: str) -> str:
        """The request target for an API path such as ``/v1/completions``."""
        if self.prefix.endswith("/v1") and api_path.startswith("/v1/"):
            return self.prefix + api_path[3:]
        return self.prefix + api_path

    @property
    def host_header(self) -> str:
        return f"{self.host}:{self.port}"


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
    events: list[tuple[int, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    saw_done: bool = False
    complete: bool = False
    error: str | None = None
    kernel_clock: bool = False


class Connection:
    """One TCP connection driven from the event loop's reader callback."""

    def __init__(self, endpoint: Endpoint, sock: socket.socket, kernel_clock: bool) -> None:
        self.endpoint = endpoint
        self._sock = sock
        self._kernel_clock = kernel_clock
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=1 << 20)
        self._loop = asyncio.get_running_loop()
        self._capture: StreamCapture | None = None
        self._decoder = SSEDecoder()
        self._done: asyncio.Future[None] | None = None
        self._clock = ClockMap.now()
        self.closed = False

    @classmethod
    async def open(cls, endpoint: Endpoint, timeout: float) -> Connection:
        """Connect (outside any request's clock) and set the socket up for stamping."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
        last: OSError | None = None
        for family, kind, proto, _, addr in infos:
            sock = socket.socket(family, kind, proto)
            sock.setblocking(False)
            try:
                await asyncio.wait_for(loop.sock_connect(sock, addr), timeout)
            except (OSError, TimeoutError) as exc:
                sock.close()
                last = exc if isinstance(exc, OSError) else OSError(f"connect timed out: {addr}")
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return cls(endpoint, sock, enable_rx_timestamps(sock))
        raise last or OSError(f"cannot resolve {endpoint.host}")

    @property
    def reusable(self) -> bool:
        return not self.closed and self._h11.our_state is h11.IDLE

    async def stream(self, method: str, target: str, headers: list[tuple[str, str]],
                     body: bytes, capture: StreamCapture) -> None:
        """Send one request and fill ``capture`` until the response ends or fails.

        Cancellation (a request timeout) closes the connection: a half-read response cannot be
        reused.
        """
        conn = self._h11
        wire = conn.send(h11.Request(method=method, target=target, headers=headers))
        wire += conn.send(h11.Data(data=body))
        wire += conn.send(h11.EndOfMessage())
        self._capture = capture
        self._decoder = SSEDecoder()
        capture.kernel_clock = self._kernel_clock
        done: asyncio.Future[None] = self._loop.create_future()
        self._done = done
        self._clock = ClockMap.now()
        self._loop.add_reader(self._sock.fileno(), self._on_readable)
        try:
            capture.start_ns = time.perf_counter_ns()
            try:
                sent = self._sock.send(wire)
            except BlockingIOError:
                sent = 0
            if sent < len(wire):
                await self._loop.sock_sendall(self._sock, memoryview(wire)[sent:])
            await done
        except asyncio.CancelledError:
            self.close()
            raise
        except OSError as exc:
            if capture.error is None:
                capture.error = f"connection error: {exc.strerror or exc}"
            self.close()
        finally:
            if not self.closed:
                self._loop.remove_reader(self._sock.fileno())
            self._capture = None
            self._done = None
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
        elif not self.closed:
            self.close()

    def _finish(self, error: str | None = None) -> None:
        capture = self._capture
        if capture is not None and error is not None and capture.error is None:
            capture.error = error
        done = self._done
        if done is not None and not done.done():
            done.set_result(None)

    def _on_readable(self) -> None:
        try:
            data, anc, _, _ = self._sock.recvmsg(_RECV_BUFSIZE, ANC_BUFSIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._finish(f"connection error: {exc.strerror or exc}")
            return
        stamp = rx_timestamp_ns(anc) if self._kernel_clock else None
        arrival = self._clock.to_perf_ns(stamp) if stamp is not None else time.perf_counter_ns()
        capture = self._capture
        if capture is None:
            return
        try:
            self._h11.receive_data(data)
            self._drain(capture, arrival, eof=not data)
        except h11.RemoteProtocolError as exc:
            self._finish(f"protocol error: {exc}")

    def _drain(self, capture: StreamCapture, arrival: int, eof: bool) -> None:
        conn = self._h11
        decoder = self._decoder
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                if capture.status == 200 and "text/event-stream" in capture.content_type:
                    events = capture.events
                    for payload in decoder.feed(event.data):
                        events.append((arrival, payload))
                        if payload == b"[DONE]":
                            capture.saw_done = True
                else:
                    capture.body += event.data
            elif isinstance(event, h11.Response):
                capture.status = event.status_code
                for name, value in event.headers:
                    if name == b"content-type":
                        capture.content_type = value.decode("latin-1").lower()
            elif isinstance(event, h11.InformationalResponse):
                continue
            elif isinstance(event, h11.EndOfMessage):
                capture.complete = True
                capture.end_ns = arrival
                self._finish()
                return
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                capture.end_ns = arrival
                self._finish("connection closed by the server before the response ended")
                return
            else:  # h11.NEED_DATA
                if eof:
                    capture.end_ns = arrival
                    self._finish("connection closed by the server before the response ended")
                return

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(ValueError, OSError):
            self._loop.remove_reader(self._sock.fileno())
        self._sock.close()


class ConnectionPool:
    """Keep-alive connections shared by all requests, opened before the timed phase."""

    def __init__(self, endpoint: Endpoint, size: int, connect_timeout: float) -> None:
        self.endpoint = endpoint
        self.size = size
        self._connect_timeout = connect_timeout
        self._idle: list[Connection] = []

    async def open(self) -> None:
        """Open ``size`` connections now, concurrently, so no request pays for a handshake.

        Failures are not raised here: a request that finds no connection opens its own and
        records why that failed, so an unreachable server shows up per request.
        """
        conns = await asyncio.gather(
            *(Connection.open(self.endpoint, self._connect_timeout) for _ in range(self.size)),
            return_exceptions=True,
        )
        self._idle.extend(c for c in conns if isinstance(c, Connection))

    @property
    def kernel_clock(self) -> bool:
        return all(c._kernel_clock for c in self._idle) if self._idle else False

    async def acquire(self) -> Connection:
        """An idle connection, or a new one when all are busy or were closed."""
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable:
                return conn
            conn.close()
        return await Connection.open(self.endpoint, self._connect_timeout)

    def release(self, conn: Connection) -> None:
        if conn.reusable:
            self._idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()
