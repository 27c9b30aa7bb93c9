"""The client's connection against real loopback peers: the pool opening 1,024 connections at
once, and one connection's request against a scripted peer (:mod:`._peer`) that answers
early, stops reading, resets, cuts or garbles its answer, stalls or switches protocols: each
ends with the server's answer or a named cause, and the connection is reused only when it
can be. What the reader records of an answer is test_connection_reads.py's."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from benchlib.measure import Endpoint, raise_open_file_limit
from benchlib.measure.wire._connection import Connection, StreamCapture
from benchlib.measure.wire._decode import decode_capture
from benchlib.measure.wire._pool import ConnectionPool
from tests._tls_files import TlsFiles

from ._peer import (
    BIG,
    SSE_HEAD,
    STREAM,
    TOO_LARGE,
    Peer,
    answer,
    parts,
    post,
    post_once,
    request,
    run,
    serve,
)


def test_1024_connections_open_at_once_through_a_tiny_backlog() -> None:
    # both ends live in this process: 2,048 sockets
    limit = raise_open_file_limit(2 * 1024 + 64)
    if limit is not None and limit < 2 * 1024 + 64:
        pytest.skip(f"open-file limit {limit} too low")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # a tiny backlog (and a GIL-bound accept): SYNs get dropped
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    port = listener.getsockname()[1]

    async def open_pool() -> tuple[int, float]:
        pool = ConnectionPool(Endpoint.parse(f"http://127.0.0.1:{port}"), 1024, 10.0)
        t0 = time.perf_counter()
        await pool.open()
        took = time.perf_counter() - t0
        n = len(pool._idle)
        pool.close()
        return n, took

    try:
        opened, took = asyncio.run(open_pool())
    finally:
        listener.close()
        for s in accepted:
            s.close()
    assert opened == 1024
    # a dropped SYN is retried after 1 s, 3 s, …: bounded connects keep it to a few retries
    assert took < 5.0, took


def test_a_refused_pool_opens_nothing_and_raises_nothing() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def go() -> int:
        pool = ConnectionPool(Endpoint.parse(f"http://127.0.0.1:{port}"), 8, 1.0)
        await pool.open()
        with pytest.raises(ConnectionRefusedError):
            await pool.acquire()
        return len(pool._idle)

    assert asyncio.run(go()) == 0


@pytest.mark.parametrize("end", ["fin", "reset"])
def test_an_answer_sent_before_the_body_was_read_is_the_whole_response(end: str) -> None:
    """A server that refuses a body it has not read (a 413) and closes, while the client is
    still sending it: the 413 is the request's answer, ended when it arrived; neither the
    failed send nor the close after the answer is taken for the request's fault."""
    ex = run(answer(TOO_LARGE, end), BIG)
    cap = ex.capture
    assert cap.status == 413 and cap.complete and cap.error is None, cap.error
    assert cap.end_ns == cap.read_times[-1] and len(cap.read_times) == 1
    assert ex.closed and not ex.reusable  # the rest of the body was never read
    assert decode_capture(0, 1, cap, "completions").error == "HTTP 413: big"


def test_a_whole_stream_sent_before_the_body_was_read_succeeds() -> None:
    ex = run(answer(STREAM, "fin"), BIG)
    out = decode_capture(0, 1, ex.capture, "completions")
    assert out.success and out.text == "a", out.error


def test_an_early_answer_keeps_the_connection_when_the_body_is_read_after_all() -> None:
    ex = run(answer(TOO_LARGE.replace(b"connection: close\r\n", b""), "stay"), BIG)
    assert ex.capture.status == 413 and ex.capture.error is None
    assert ex.reusable and not ex.closed


@pytest.mark.parametrize(("end", "error"), [
    ("fin", "connection closed by the server while the request was being sent"),
    ("reset", "connection reset by the server before responding"),
])
def test_a_server_that_stops_reading_without_answering_is_named(end: str, error: str) -> None:
    ex = run(answer(b"", end), BIG)
    assert ex.capture.error == error and ex.capture.status is None
    assert ex.capture.end_ns >= ex.capture.start_ns > 0 and ex.closed


@pytest.mark.parametrize(("sent", "end", "error"), [
    (b"", "fin", "connection closed by the server before responding"),
    (SSE_HEAD, "fin", "connection closed by the server mid-response"),
    (SSE_HEAD, "reset", "connection reset by the server mid-response"),
    (b"HELLO\r\n\r\n", "stay",
     "malformed HTTP response from the server: illegal status line: bytearray(b'HELLO')"),
])
def test_a_response_cut_short_or_broken_names_its_cause(sent: bytes, end: str,
                                                        error: str) -> None:
    ex = run(answer(sent, end))
    cap = ex.capture
    assert cap.error == error and ex.closed
    assert cap.status == (200 if sent == SSE_HEAD else None)
    # ended at the read that ended it: the last stamped one, or a reset's (no stamp, later)
    assert cap.end_ns > cap.read_times[-1] if end == "reset" else cap.end_ns == cap.read_times[-1]


def test_bytes_past_a_whole_answer_do_not_reach_the_next_request() -> None:
    """Nothing may follow a response on a keep-alive connection (no request is pipelined):
    bytes that do would be read as the next request's answer, so the connection goes."""
    ex = run(answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}JUNK"))
    assert ex.capture.complete and ex.capture.error is None
    assert ex.closed and not ex.reusable
    assert run(answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")).reusable


def test_a_cancelled_request_closes_its_connection() -> None:
    """A request timeout cancels the stream: a half-read response cannot be reused."""
    async def go() -> tuple[bool, bool]:
        asked = asyncio.Event()

        async def stall(peer: Peer) -> None:
            await peer.read_head()
            await peer.send(SSE_HEAD)
            asked.set()
            await peer.until_closed()

        endpoint, played = await serve(stall)
        conn = await Connection.open(endpoint, 5.0)
        streaming = asyncio.create_task(conn.stream(
            "POST", "/", [("host", "h"), ("content-length", "2")], b"{}", StreamCapture()))
        await asyncio.wait_for(asked.wait(), 5)
        streaming.cancel()
        with pytest.raises(asyncio.CancelledError):
            await streaming
        await asyncio.wait_for(played, 5)  # the peer saw the close
        return conn.closed, conn.reusable

    assert asyncio.run(go()) == (True, False)


def test_a_kept_alive_connection_carries_the_next_request() -> None:
    async def go() -> None:
        async def two(peer: Peer) -> None:
            for reply in (STREAM, b"HTTP/1.1 500 Oops\r\ncontent-length: 4\r\n\r\nfail"):
                assert (await peer.read_request()).endswith(b"\r\n\r\n{}")
                await peer.send(reply)
            await peer.until_closed()

        endpoint, played = await serve(two)
        opened = time.perf_counter()
        conn = await Connection.open(endpoint, 5.0)
        # what the pool reads: idle since it opened, nothing served, no whole answer yet
        assert opened <= conn.idle_since <= time.perf_counter()
        assert conn.served == 0 and conn.last_ok is False
        first, second = StreamCapture(), StreamCapture()
        for n, capture in enumerate((first, second), start=1):
            await post(conn, capture)
            assert conn.served == n and conn.reusable and conn.closed is False
            assert capture.kernel_clock is conn.kernel_clock is True  # Linux stamps loopback
        conn.close()
        assert not conn.reusable
        await played
        assert decode_capture(0, 1, first, "completions").text == "a"
        assert (second.status, second.error, bytes(second.body)) == (500, None, b"fail")

    asyncio.run(go())


@pytest.mark.parametrize(("size", "error"), [
    (64 * 1024, None),  # far over h11's default of 16 KiB
    (3 << 19, "malformed HTTP response from the server: Receive buffer too long"),
])
def test_response_headers_up_to_a_mebibyte_are_read(size: int, error: str | None) -> None:
    """A head still incomplete after a read is held up to 1 MiB (h11 would stop at 16 KiB):
    the head comes in two reads, the first of 40 KiB."""
    head = b"HTTP/1.1 200 OK\r\nx-long: " + b"a" * size + b"\r\ncontent-length: 0\r\n\r\n"
    ex = run(parts(head[:40 << 10], head[40 << 10:]))
    assert ex.capture.error == error
    assert ex.capture.complete is (error is None)


def test_a_server_switching_protocols_ends_the_request() -> None:
    ex = asyncio.run(request(
        answer(b"HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n"),
        headers=(("connection", "upgrade"), ("upgrade", "x"))))
    assert ex.capture.status is None and ex.closed
    assert ex.capture.error == "the server switched protocols or sent data past the response"
    assert ex.capture.end_ns == ex.capture.read_times[-1]


def test_a_connection_goes_to_the_addresses_and_context_it_is_given(
        tls_files: TlsFiles) -> None:
    """The pool resolves the host and builds the TLS context once for all its connections:
    a connection uses those, not its own (here the endpoint alone would reach nothing: its
    port is closed and it trusts only the system's authorities)."""
    elsewhere = Endpoint.parse("https://127.0.0.1:1")

    async def go() -> tuple[Endpoint, int | None]:
        endpoint, played = await serve(answer(STREAM), tls_files)
        given = [(socket.AF_INET, socket.SOCK_STREAM, 6, ("127.0.0.1", endpoint.port))]
        conn = await Connection.open(elsewhere, 5.0, given, endpoint.tls_context())
        capture = await post_once(conn, played)
        return conn.endpoint, capture.status

    assert asyncio.run(go()) == (elsewhere, 200)
