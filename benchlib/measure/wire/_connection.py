"""A keep-alive HTTP/1.1 connection that streams one response at a time, stamping arrivals.

Why not aiohttp or httpx: they read sockets with ``recv`` inside their transports, so the only
time they can offer is when Python got round to the bytes. Here the socket is read with
``recvmsg`` straight from the event loop's readiness callback, and every read carries the
kernel's arrival stamp (see :mod:`benchlib._wire`). HTTP framing is h11's (sans-I/O, well
kept); SSE framing is :class:`~benchlib.measure.wire._sse.SSEDecoder`. Per read the callback does
the least it can: stamp, unframe, and append ``(arrival_ns, payload)``; JSON is decoded after
the request ends.

``https`` goes through the same callback: the ciphertext is read with the same stamped
``recvmsg`` and decrypted in memory (:class:`~benchlib._tls.TlsChannel`), so an event's
arrival is the stamp of the read that completed the TLS record carrying its last byte. It is
exact (``event_exact``) under the plain-HTTP rule, nothing of a later event in the read, plus
one of TLS's: the read ended where that record ended. A read that completed the event's
record and brought part of the next one is only an upper bound: its stamp is the newest
segment's, which may be the later record's. The handshake happens in :meth:`Connection.open`,
outside every request's clock, like the TCP connect.

The clock of a request starts immediately before its bytes are handed to the socket: building
(and encrypting) the request, waiting for a free connection or for the event loop are not
counted. Where
requests go is :mod:`benchlib.measure.wire._endpoint`; the connections a run shares are
:mod:`benchlib.measure.wire._pool`'s.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time

import h11

from benchlib._tls import Decrypted, TlsChannel, tls_error_message
from benchlib._wire import (
    ANC_BUFSIZE,
    ClockMap,
    rx_timestamp_ns,
    send_whole,
)
from benchlib.measure.wire._capture import StreamCapture, closed_message, os_error_message
from benchlib.measure.wire._dial import dial
from benchlib.measure.wire._endpoint import Address, Endpoint
from benchlib.measure.wire._sse import SSEDecoder

__all__ = ["Connection", "StreamCapture"]

_RECV_BUFSIZE = 1 << 18


class Connection:
    """One TCP connection (TLS over it for ``https``) driven from the event loop's reader
    callback."""

    def __init__(self, endpoint: Endpoint, sock: socket.socket, kernel_clock: bool,
                 tls: TlsChannel | None = None) -> None:
        self.endpoint = endpoint
        self._sock = sock
        self._kernel_clock = kernel_clock
        self._tls = tls
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=1 << 20)
        self._loop = asyncio.get_running_loop()
        #: the request in flight: its capture and the future its end sets (None between
        #: requests), its SSE decoder and its realtime→perf_counter map (set per request)
        self._capture: StreamCapture | None = None
        self._done: asyncio.Future[None] | None = None
        self._decoder: SSEDecoder
        self._clock: ClockMap
        self.closed = False
        #: when this connection last went idle (perf_counter seconds)
        self.idle_since = time.perf_counter()
        #: requests sent on it so far (the one in flight included)
        self.served = 0
        #: its last request ended as a whole, successful response (the load generator sets
        #: it): a server that closes such a connection at once closes after every response
        self.last_ok = False
        #: the server's close came with its last answer's end (over TLS a ``close_notify``
        #: read with the final chunk): the connection is closed already, and the close is
        #: the server's, right behind a whole answer
        self.closed_behind_answer = False

    @classmethod
    async def open(cls, endpoint: Endpoint, timeout: float,
                   addrs: list[Address] | None = None,
                   context: ssl.SSLContext | None = None) -> Connection:
        """Connect and, for ``https``, shake hands (outside any request's clock); set the
        socket up for stamping.

        ``addrs`` are the endpoint's resolved addresses (:func:`resolve`); without them the
        host is resolved here. ``context``: the pool's TLS context (else the endpoint's is
        built here). A failed handshake raises ``ssl.SSLError`` (an ``OSError``), a
        certificate that is not trusted ``ssl.SSLCertVerificationError``.
        """
        sock, stamps, tls = await dial(endpoint, timeout, addrs, context)
        return cls(endpoint, sock, stamps, tls)

    @property
    def kernel_clock(self) -> bool:
        """Whether this socket's reads carry kernel receive stamps."""
        return self._kernel_clock

    @property
    def reusable(self) -> bool:
        return not self.closed and self._h11.our_state is h11.IDLE

    def hung_up(self) -> bool:
        """Whether the server closed this idle connection (or sent bytes nobody asked for).

        Servers close keep-alive connections that sit idle (uvicorn after 5 s); a request sent
        on one would fail with "closed before responding". A non-blocking ``MSG_PEEK`` tells
        without consuming anything, before any request's clock starts. Over TLS a peek sees
        ciphertext (session tickets are no data), so what waits is read and decrypted
        (:meth:`~benchlib._tls.TlsChannel.idle_check`).
        """
        if self._tls is not None:
            return self._tls.idle_check(self._sock)
        try:
            self._sock.recv(1, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True
        return True  # b"" (EOF) or unsolicited bytes, e.g. a 408 sent before closing

    async def stream(self, method: str, target: str, headers: list[tuple[str, str]],
                     body: bytes, capture: StreamCapture) -> None:
        """Send one request and fill ``capture`` until the response ends or fails.

        A server may answer before it has read the whole request (a 413) and stop reading:
        its answer is the request's, and the connection closes. Cancellation (a request
        timeout) closes the connection: a half-read response cannot be reused.
        """
        self.served += 1
        conn = self._h11
        wire = conn.send(h11.Request(method=method, target=target, headers=headers))
        wire += conn.send(h11.Data(data=body))
        wire += conn.send(h11.EndOfMessage())
        if self._tls is not None:
            # records the server sent since the handshake (TLS 1.3 session tickets) are read
            # now, outside the clock: read during the request, their arrival before its start
            # would look like a clock step
            self._tls.idle_check(self._sock)
            try:
                wire = self._tls.encrypt(wire)
            except ssl.SSLError as exc:  # a session the server already ended
                capture.error = tls_error_message(exc)
                capture.start_ns = capture.end_ns = time.perf_counter_ns()
                self.close()
                return
        self._capture = capture
        self._decoder = SSEDecoder()
        capture.kernel_clock = self._kernel_clock
        done: asyncio.Future[None] = self._loop.create_future()
        self._done = done
        self._clock = ClockMap.now()
        self._loop.add_reader(self._sock.fileno(), self._on_readable)
        unsent: str | None = None
        try:
            capture.start_ns = time.perf_counter_ns()
            try:
                await send_whole(self._loop, self._sock, wire)
            except OSError as exc:  # the server stopped reading; an answer it sent first (a
                unsent = os_error_message(exc, None, sending=True)  # 413) is still read; the
                # words are used only where none came
            await done  # to its end, or to the EOF or reset the server's going left
            capture.clock_drift_ns = ClockMap.now().offset_ns - self._clock.offset_ns
        except asyncio.CancelledError:
            self.close()
            raise
        finally:
            self._capture = None
            self._done = None
        if unsent is not None and capture.error == closed_message(None):  # no answer, and a
            capture.error = unsent  # close (not a reset) read: the failed send says more
        whole = unsent is None and conn.our_state is h11.DONE and conn.their_state is h11.DONE
        if whole and conn.trailing_data == (b"", False):  # bytes past the answer (the next
            conn.start_next_cycle()  # would read them as its own) or a close: not reused
        else:
            self.closed_behind_answer = whole and conn.trailing_data == (b"", True)
            self.close()

    def _finish(self, error: str | None = None) -> None:
        """End the request in flight, with ``error`` (its transport fault) or none: the reader
        stops, so what comes after (a close behind a whole answer sent before the request was
        read to its end) is no part of it, and the stream waiting on it resumes. Runs once
        per request, from the reader, which runs only while a request is in flight."""
        capture, done = self._capture, self._done
        if capture is not None and done is not None:
            capture.error = error
            done.set_result(None)
        self._loop.remove_reader(self._sock.fileno())

    def _on_readable(self) -> None:
        """The loop's reader callback: one ``recvmsg``, stamped, unframed, appended.

        It must never raise: an exception escaping a reader callback would leave the request
        waiting for its timeout, so every failure ends the request with a named error.
        """
        capture = self._capture
        if capture is None:  # registered only while a request is in flight
            return
        try:
            data, anc, _, _ = self._sock.recvmsg(_RECV_BUFSIZE, ANC_BUFSIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            capture.end_ns = time.perf_counter_ns()
            self._finish(os_error_message(exc, capture))
            return
        now = time.perf_counter_ns()
        stamp = rx_timestamp_ns(anc)  # None where the socket took no stamping
        pre: Decrypted | None = None
        if stamp is None:
            arrival = now
        else:
            arrival = self._clock.to_perf_ns(stamp)
            if self._tls is not None and arrival < capture.start_ns:
                # a new connection's TLS 1.3 session tickets can land between the check
                # before the send and the send: bytes from before the request that carry
                # no data are not part of it (and no clock step)
                try:
                    pre = self._tls.decrypt(data)
                except ssl.SSLError as exc:
                    capture.end_ns = now
                    self._finish(tls_error_message(exc))
                    return
                if not (pre.head or pre.last or pre.closed):
                    return
            if not capture.start_ns <= arrival <= now:  # bytes cannot arrive before the
                capture.clamped_reads += 1  # send or after the read: the clock stepped
                arrival = min(max(arrival, capture.start_ns), now)
        read = len(capture.read_times)
        capture.read_times.append(arrival)
        capture.read_user.append(now)
        capture.read_stamped.append(stamp is not None)
        first = len(capture.events)
        eof = not data
        try:
            if self._tls is None:
                self._h11.receive_data(data)
                self._drain(capture, arrival, read)
            else:
                first, eof = self._feed_tls(capture, data, arrival, read, pre)
            if (len(capture.events) > first and not capture.complete
                    and not self._decoder.pending and not self._h11.trailing_data[0]):
                capture.event_exact[-1] = True  # nothing of a later event came with it
        except Exception as exc:  # never leave the request hanging, whatever came
            capture.end_ns = arrival
            self._finish(self._read_error(capture, exc, eof))

    def _read_error(self, capture: StreamCapture, exc: Exception, eof: bool) -> str:
        """The words for what broke a read: h11's (a malformed response; a cut-off one at the
        stream's end, a FIN or a close_notify, is the server's close), TLS's (a broken record,
        a fatal alert), or, for anything unforeseen, the exception's."""
        if isinstance(exc, h11.RemoteProtocolError):
            if eof or (self._tls is not None and self._tls.closed):
                return closed_message(capture)
            return f"malformed HTTP response from the server: {exc}"
        if isinstance(exc, ssl.SSLError):
            return tls_error_message(exc)
        return f"cannot read the response: {type(exc).__name__}: {exc}"

    def _feed_tls(self, capture: StreamCapture, data: bytes, arrival: int, read: int,
                  decrypted: Decrypted | None = None) -> tuple[int, bool]:
        """Decrypt one read and feed its plaintext to h11: first the records before the
        read's last whole record, then that record, then the end of the stream if it came.

        Returns the number of events that preceded the last record's (only events after it
        can be exact; all of them when the read did not end at a record boundary) and whether
        the stream ended.
        """
        assert self._tls is not None
        out = decrypted if decrypted is not None else self._tls.decrypt(data)
        if out.head:
            self._h11.receive_data(out.head)
            self._drain(capture, arrival, read)
        before = len(capture.events)
        if out.last:
            self._h11.receive_data(out.last)
            if self._done is not None and not self._done.done():
                self._drain(capture, arrival, read)
        if out.closed:
            self._h11.receive_data(b"")
            if self._done is not None and not self._done.done():
                self._drain(capture, arrival, read)
        return (before if out.boundary else len(capture.events)), out.closed

    def _drain(self, capture: StreamCapture, arrival: int, read: int) -> None:
        conn = self._h11
        decoder = self._decoder
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                if capture.status == 200 and "text/event-stream" in capture.content_type:
                    events = capture.events
                    for payload in decoder.feed(event.data):
                        events.append((arrival, payload))
                        capture.event_read.append(read)
                        capture.event_exact.append(False)
                        if payload == b"[DONE]":
                            capture.saw_done = True
                else:
                    capture.body += event.data
            elif isinstance(event, h11.Response):
                capture.status = event.status_code
                for name, value in event.headers:
                    if name == b"content-type":
                        capture.content_type = value.decode("latin-1").lower()
                    elif name == b"x-benchlib-synthetic":
                        capture.synthetic = True
            elif isinstance(event, h11.InformationalResponse):
                continue
            elif isinstance(event, h11.EndOfMessage):
                capture.complete = True
                capture.end_ns = arrival
                self._finish()
                return
            elif event is h11.NEED_DATA:  # at the stream's end h11 raises instead: a close
                return  # before the response's end is a RemoteProtocolError
            else:  # h11.PAUSED after a 101 (a ConnectionClosed comes only after the response's
                # end, and _finish stops reading there)
                capture.end_ns = arrival
                self._finish("the server switched protocols or sent data past the response")
                return

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._loop.remove_reader(self._sock.fileno())  # no-op after the request's end
        if self._tls is not None:
            self._tls.close_notify(self._sock)
        self._sock.close()

