"""TLS over a raw non-blocking socket, so that every read keeps its kernel arrival stamp.

``ssl.SSLSocket`` (and every library built on it) reads the socket itself, with ``recv``: the
kernel's receive stamp (:mod:`benchlib._wire`) never reaches Python. Here OpenSSL never
touches the socket. An ``ssl.SSLObject`` works between two ``ssl.MemoryBIO``\\ s; the owner of
the socket reads ciphertext with ``recvmsg`` (stamp and all), hands it to
:meth:`TlsChannel.decrypt` and gets the plaintext back, and sends what
:meth:`TlsChannel.encrypt` returns with :func:`~benchlib._wire.send_whole`. So with TLS, as
without, an event's arrival is the stamp of the read that completed it: the read that
completed the TLS record carrying its last byte (OpenSSL cannot hand out a record's plaintext
before the whole record is in).

A read's stamp is the arrival of the newest segment it returned. It is the exact arrival of
the events its last record completed only when that record was the last thing in the read:
:class:`RecordBoundaries` follows the record headers (5 bytes: type, version, length) across
reads, and :meth:`TlsChannel.decrypt` decrypts a read in three parts (the records before its
last whole record, that record, an unfinished one) so the caller knows which plaintext the
stamp is exact for (see :class:`Decrypted`).

Both the measuring client (:mod:`benchlib.measure.wire._connection`) and the scripted server
(:mod:`benchlib.scripted._peer`) use this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["Decrypted", "RecordBoundaries", "TlsChannel", "tls_error_message"]

#: a TLS record header: content type (1), legacy version (2), length (2)
_HEADER = 5
_READ_SIZE = 1 << 18
_HANDSHAKE_RECV = 1 << 16


class RecordBoundaries:
    """Where TLS records end in a ciphertext stream that arrives read by read.

    The state is the bytes still missing from the current header or record body; it starts at
    the stream's first byte (the handshake included), so every read must be fed.
    """

    def __init__(self) -> None:
        self._in_header = True
        self._need = _HEADER
        self._header = bytearray()

    @property
    def at_boundary(self) -> bool:
        """Whether the bytes fed so far end exactly where a record ends."""
        return self._in_header and self._need == _HEADER

    def feed(self, data: bytes) -> tuple[int, int]:
        """Follow ``data``; return ``(start, end)``: the offsets in ``data`` of the last record
        that ends inside it (``start`` is 0 when the record began in an earlier read), or
        ``(-1, -1)`` when no record ends in ``data``."""
        pos, size = 0, len(data)
        start = 0
        last = (-1, -1)
        while pos < size:
            if self._in_header and self._need == _HEADER:
                start = pos
            take = min(self._need, size - pos)
            if self._in_header:
                self._header += data[pos:pos + take]
            pos += take
            self._need -= take
            if self._need:
                break
            if self._in_header:  # the body follows (a zero-length record ends here)
                self._need = int.from_bytes(self._header[3:5], "big")
                self._header.clear()
                self._in_header = False
            if not self._in_header and self._need == 0:
                last = (start, pos)
                self._in_header = True
                self._need = _HEADER
        return last


@dataclass(frozen=True, slots=True)
class Decrypted:
    """The plaintext of one read, split where its stamp stops being exact.

    ``last`` is the plaintext of the last record the read completed; ``head`` that of the
    records it completed before. The read's stamp is the exact arrival of ``last``'s final
    byte only when ``boundary`` is true (nothing of a later record came in the same read);
    every other byte got only an upper bound. ``closed``: the peer sent ``close_notify`` or
    the read was the end of the stream.
    """

    head: bytes
    last: bytes
    boundary: bool
    closed: bool


def tls_error_message(exc: ssl.SSLError) -> str:
    """A TLS failure as a user reads it: the certificate's problem, or OpenSSL's reason."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {exc.verify_message}"
    reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
    if reason == "WRONG_VERSION_NUMBER":
        return "the server did not answer in TLS (wrong version number): is it http://?"
    if "ALERT" in reason:
        return f"TLS alert from the peer: {reason}"
    return f"TLS error: {reason}"


class TlsChannel:
    """One TLS session over a socket someone else reads and writes.

    ``decrypt`` and ``encrypt`` never touch the socket; ``handshake`` does (outside any
    request's clock). Bytes OpenSSL wants to send outside a write (a TLS 1.3 ``KeyUpdate``
    answer) stay in the outgoing BIO and leave, in order, ahead of the next write's.
    """

    def __init__(self, context: ssl.SSLContext, *, server_side: bool,
                 server_hostname: str | None = None) -> None:
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._obj = context.wrap_bio(self._in, self._out, server_side=server_side,
                                     server_hostname=server_hostname)
        self._records = RecordBoundaries()
        self.closed = False

    async def handshake(self, loop: asyncio.AbstractEventLoop, sock: socket.socket,
                        timeout: float | None = None,
                        recv: Callable[[], Awaitable[bytes]] | None = None) -> None:
        """Run the handshake on the non-blocking ``sock``; ``recv`` reads it (default:
        ``loop.sock_recv``; a server passes its stamped read).

        The peer's last flight may carry application data too (a client sends its request
        right behind its ``Finished``): it stays decrypted-to-be in the channel, and
        :meth:`buffered` hands it out.

        Raises ``ssl.SSLError`` (``SSLCertVerificationError`` for an untrusted certificate:
        the alert goes out first; ``SSLEOFError`` when the peer closes), ``TimeoutError``, or
        the socket's ``OSError`` (a reset).
        """

        async def pump() -> None:
            while True:
                try:
                    self._obj.do_handshake()
                except ssl.SSLWantReadError:
                    await self._flush(loop, sock)
                    data = await (recv() if recv is not None
                                  else loop.sock_recv(sock, _HANDSHAKE_RECV))
                    if not data:  # e.g. a plain-HTTP server given the client's hello
                        raise ssl.SSLEOFError(
                            ssl.SSL_ERROR_EOF, "the peer closed the connection during the TLS "
                            "handshake (does it speak TLS on this port?)") from None
                    self._records.feed(data)
                    self._in.write(data)
                    continue
                except ssl.SSLError:
                    self.send_pending(sock)  # the alert: the peer learns why
                    raise
                await self._flush(loop, sock)  # our Finished (a server: its session tickets)
                return

        await asyncio.wait_for(pump(), timeout)

    async def _flush(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
        data = self._out.read()
        if data:
            await loop.sock_sendall(sock, data)

    def send_pending(self, sock: socket.socket) -> None:
        """Best effort, never blocking: send what OpenSSL queued (an alert, close_notify)."""
        data = self._out.read()
        if data:
            with contextlib.suppress(OSError):
                sock.send(data)

    def buffered(self) -> bytes:
        """Plaintext already received but not yet read (what came with the handshake)."""
        return self._read()

    def encrypt(self, data: bytes) -> bytes:
        """The ciphertext to send for ``data`` (with anything OpenSSL queued before it)."""
        if data:
            self._obj.write(data)
        return self._out.read()

    def decrypt(self, data: bytes) -> Decrypted:
        """Take one read's ciphertext (``b""``: the end of the stream) and return its
        plaintext, split at the read's last whole record (see :class:`Decrypted`).

        Raises ``ssl.SSLError`` for a broken record or a fatal alert from the peer. A stream
        that ends without ``close_notify`` ends like a TCP close: HTTP's own framing tells a
        cut response.
        """
        if self.closed:  # nothing may follow close_notify or the end of the stream
            return Decrypted(b"", b"", True, True)
        if not data:
            self._in.write_eof()
            return Decrypted(b"", self._read(), True, True)
        start, end = self._records.feed(data)
        if end < 0:  # no record ends in this read: nothing to decrypt yet
            self._in.write(data)
            return Decrypted(b"", self._read(), False, self.closed)
        if start:
            self._in.write(data[:start])
        head = self._read() if start else b""
        self._in.write(data[start:end])
        last = self._read()
        if end < len(data):
            self._in.write(data[end:])
            last += self._read()  # an unfinished record: nothing, but never lose a byte
        return Decrypted(head, last, self._records.at_boundary, self.closed)

    def _read(self) -> bytes:
        parts: list[bytes] = []
        while not self.closed:
            try:
                chunk = self._obj.read(_READ_SIZE)
            except ssl.SSLWantReadError:
                break
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):  # close_notify, or a bare EOF
                self.closed = True
                break
            if not chunk:  # how ``SSLObject.read`` reports a close_notify received
                self.closed = True
                break
            parts.append(chunk)
        return b"".join(parts)

    def idle_check(self, sock: socket.socket) -> bool:
        """Whether the peer closed this idle connection or sent it data nobody asked for.

        A ``MSG_PEEK`` cannot tell: TLS 1.3 servers send session tickets after the handshake,
        so an idle connection holds ciphertext that is no data at all. Whatever waits is read
        (no request is in flight) and decrypted: only a close, ``close_notify``, an alert or
        plaintext count.
        """
        if self.buffered():
            return True
        while True:
            try:
                data = sock.recv(_READ_SIZE)
            except (BlockingIOError, InterruptedError):
                return self.closed
            except OSError:
                return True
            try:
                out = self.decrypt(data)
            except ssl.SSLError:
                return True
            if out.closed or out.head or out.last:
                return True

    def close_notify(self, sock: socket.socket) -> None:
        """Tell the peer the session ends (best effort, never blocking)."""
        with contextlib.suppress(ssl.SSLError, ValueError):
            self._obj.unwrap()
        self.send_pending(sock)
