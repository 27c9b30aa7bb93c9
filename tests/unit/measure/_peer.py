"""A scripted loopback peer for the connection tests: a real listener on 127.0.0.1 that
accepts one connection and plays what the test tells it, step by step (read the request,
send these bytes, close early, reset, stall, answer over TLS or break it).

The client side is the real :class:`~benchlib.measure.wire._connection.Connection`, opened by
its own dial; only the server's behaviour is scripted."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from benchlib._tls import TlsChannel
from benchlib._wire import enable_rx_timestamps
from benchlib.measure.wire._connection import Connection, StreamCapture
from benchlib.measure.wire._endpoint import Endpoint
from tests._tls_files import TlsFiles

__all__ = ["BIG", "DATA", "SSE_HEAD", "STREAM", "TOO_LARGE", "Exchange", "Peer", "Script",
           "answer", "chunk", "parts", "post", "post_once", "request", "roomy", "run", "serve"]

#: the server's receive buffer: small, so a large request body cannot all be taken in
RCVBUF = 64 * 1024

#: a socket that asks for receive stamps while the tests run: Linux turns stamping on for
#: every socket a moment after the first asks (deferred work) and off after the last closes,
#: so bytes sent right after a lone connection asked could come unstamped
_STAMPING = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
enable_rx_timestamps(_STAMPING)


@dataclass
class Peer:
    """The server's end of one accepted connection (TLS over it when ``tls`` is set)."""

    loop: asyncio.AbstractEventLoop
    sock: socket.socket
    tls: TlsChannel | None = None
    #: every byte of the request read so far (plaintext)
    received: bytearray = field(default_factory=bytearray)

    async def read(self, n: int = 1) -> bytes:
        """At least ``n`` more bytes of the request (fewer only at its end)."""
        start = len(self.received)
        while len(self.received) < start + n:
            data = await self.loop.sock_recv(self.sock, 65536)
            if not data:
                break
            if self.tls is None:
                self.received += data
            else:
                out = self.tls.decrypt(data)
                self.received += out.head + out.last
        return bytes(self.received[start:])

    async def read_head(self) -> bytes:
        """The request up to the end of its headers."""
        while b"\r\n\r\n" not in self.received:
            if not await self.read():
                break
        return bytes(self.received)

    async def read_request(self) -> bytes:
        """The next whole request, its head and its content-length body (what follows it
        stays for the next call); ``b""`` if the client closed first."""
        while True:
            head, sep, rest = bytes(self.received).partition(b"\r\n\r\n")
            if sep:
                length = re.search(rb"(?im)^content-length: *(\d+)", head)
                n = int(length.group(1)) if length else 0
                if len(rest) >= n:
                    del self.received[:len(head) + len(sep) + n]
                    return head + sep + rest[:n]
            if not await self.read():
                return b""

    async def send(self, data: bytes) -> None:
        """``data`` as the response's next bytes (encrypted over TLS)."""
        await self.loop.sock_sendall(self.sock, self.tls.encrypt(data) if self.tls else data)

    async def send_raw(self, data: bytes) -> None:
        """``data`` as it is, TLS or not: a broken record, say."""
        await self.loop.sock_sendall(self.sock, data)

    def close_notify(self) -> bytes:
        """The TLS session's end (``close_notify``), to send when and with what the script
        chooses: sent apart, a small record may reach the client in a read of its own."""
        assert self.tls is not None
        with contextlib.suppress(ssl.SSLWantReadError):  # TLS 1.3 waits for the answer
            self.tls._obj.unwrap()
        return self.tls._out.read()

    def shutdown(self) -> None:
        """A FIN: the server will send no more (it can still read)."""
        self.sock.shutdown(socket.SHUT_WR)

    def reset(self) -> None:
        """An RST: the connection is torn down, nothing queued is delivered."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    async def until_closed(self) -> None:
        """Read and drop the request until the client closes the connection."""
        while await self.read(65536):
            pass


Script = Callable[[Peer], Awaitable[None]]


async def serve(script: Script, tls: TlsFiles | None = None
                ) -> tuple[Endpoint, asyncio.Task[None]]:
    """A listener playing ``script`` on the first connection it accepts; its endpoint and
    the task that ends when the script has (and the server's socket is closed)."""
    loop = asyncio.get_running_loop()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    scheme = "https" if tls else "http"
    endpoint = Endpoint.parse(f"{scheme}://127.0.0.1:{listener.getsockname()[1]}",
                              ca_bundle=tls.cert if tls else None)

    async def play() -> None:
        try:
            sock, _ = await loop.sock_accept(listener)
        finally:
            listener.close()
        sock.setblocking(False)
        peer = Peer(loop, sock)
        try:
            if tls is not None:
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                ctx.load_cert_chain(tls.cert, tls.key)
                peer.tls = TlsChannel(ctx, server_side=True)
                await peer.tls.handshake(loop, sock, 5.0)
                peer.received += peer.tls.buffered()
            await script(peer)
        except OSError:
            pass  # the client closed first: the script's remaining steps have no one to hear
        finally:
            sock.close()

    return endpoint, asyncio.create_task(play())


async def roomy(endpoint: Endpoint) -> Connection:
    """A connection (TLS for ``https``) whose socket holds 4 MiB unread: more than a read of
    the reader or of the idle check (256 KiB each), so bytes can wait in it across reads."""
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.setblocking(False)
    await loop.sock_connect(sock, (endpoint.host, endpoint.port))
    tls = None
    if endpoint.tls:
        tls = TlsChannel(endpoint.tls_context(), server_side=False,
                         server_hostname=endpoint.host)
        await tls.handshake(loop, sock, 5.0)
    return Connection(endpoint, sock, enable_rx_timestamps(sock), tls)


@dataclass(frozen=True)
class Exchange:
    """One request's end as the client saw it."""

    capture: StreamCapture
    #: the connection could carry the next request
    reusable: bool
    #: the connection closed itself (a failure, or a server that stopped reading)
    closed: bool


async def request(script: Script, body: bytes = b"{}", *, tls: TlsFiles | None = None,
                  before: Callable[[Connection], Awaitable[None]] | None = None,
                  headers: tuple[tuple[str, str], ...] = ()) -> Exchange:
    """One POST with ``body`` (and ``headers`` beside host and length) on a fresh connection
    to a peer playing ``script``. ``before`` runs between the connect and the request (for
    the peer to act on the idle connection)."""
    endpoint, played = await serve(script, tls)
    conn = await Connection.open(endpoint, 5.0)
    capture = StreamCapture()
    try:
        if before is not None:
            await before(conn)
        await asyncio.wait_for(conn.stream(
            "POST", "/v1/completions",
            [("host", "127.0.0.1"), ("content-length", str(len(body))), *headers], body,
            capture), 10)
        return Exchange(capture, conn.reusable, conn.closed)
    finally:
        conn.close()
        await played


async def post(conn: Connection, capture: StreamCapture) -> None:
    """A small POST (``{}``) on an open connection, its answer into ``capture``, in 5 s."""
    await asyncio.wait_for(conn.stream("POST", "/", [
        ("host", "h"), ("content-length", "2")], b"{}", capture), 5)


async def post_once(conn: Connection, played: asyncio.Task[None]) -> StreamCapture:
    """:func:`post` on ``conn``, then the connection closed and the peer's script awaited,
    even when the request fails: what it captured."""
    capture = StreamCapture()
    try:
        await post(conn, capture)
    finally:
        conn.close()
        await played
    return capture


#: a request body no loopback socket takes in whole while the peer does not read it
BIG = b"x" * (16 << 20)
TOO_LARGE = (b"HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\n"
             b"content-length: 30\r\nconnection: close\r\n\r\n"
             b'{"error": {"message": "big"}}\n')
SSE_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\n\r\n")
DATA = b'data: {"id": "x", "choices": [{"index": 0, "text": "a"}]}\n\ndata: [DONE]\n\n'
STREAM = SSE_HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(DATA), DATA)


def answer(data: bytes, end: str = "stay") -> Script:
    """A script: read the request's head, send ``data``, then ``fin`` (a FIN, read a little
    more, close with the rest of the request unread), ``reset`` or ``stay`` (read on until
    the client closes)."""
    async def script(peer: Peer) -> None:
        await peer.read_head()
        await peer.send(data)
        if end == "fin":
            peer.shutdown()
            await peer.read(1 << 20)  # read a little more, then close with the rest unread
            return
        if end == "reset":
            peer.reset()
            return
        await peer.until_closed()
    return script


def run(script: Script, body: bytes = b"{}", tls: TlsFiles | None = None) -> Exchange:
    """:func:`request` in an event loop of its own."""
    return asyncio.run(request(script, body, tls=tls))


def parts(*parts: bytes) -> Script:
    """A script: answer with ``parts`` sent apart, each in a read of its own."""
    async def script(peer: Peer) -> None:
        await peer.read_head()
        for part in parts:
            await peer.send(part)
            await asyncio.sleep(0.02)
        await peer.until_closed()
    return script


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)
