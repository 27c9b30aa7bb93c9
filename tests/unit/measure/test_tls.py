"""TLS in memory over raw sockets (:mod:`benchlib._tls`): record boundaries followed across
any split; the client's exactness rule at record boundaries, read by read; an idle
connection's session tickets are not a hang-up, a ``close_notify`` is; arbitrary server
bytes through the whole client over TLS end as they end over plain TCP; and a scripted peer
(:mod:`._peer`) that breaks the session or ends it inside a read."""

from __future__ import annotations

import asyncio
import itertools
import socket
import ssl
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlib._tls import RecordBoundaries, TlsChannel
from benchlib.measure.wire._connection import Connection, StreamCapture
from benchlib.measure.wire._decode import decode_capture
from benchlib.measure.wire._endpoint import Endpoint
from benchlib.measure.wire._request import EndpointKind
from tests._tls_files import TlsFiles
from tests.unit.measure.test_sse import _HEADS, _exchange, _responses

from ._peer import Peer, request

_DATA = b'data: {"id": "x", "choices": [{"index": 0, "text": "a"}]}\n\ndata: [DONE]\n\n'
_CHUNK = b"%x\r\n%s\r\n" % (len(_DATA), _DATA)
STREAM = _HEADS[0] + _CHUNK + b"0\r\n\r\n"


def _record(body: bytes) -> bytes:
    return bytes([23, 3, 3]) + len(body).to_bytes(2, "big") + body


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=8),
       st.lists(st.integers(0, 400), max_size=12))
def test_record_ends_are_found_across_any_split(sizes: list[int], cuts: list[int]) -> None:
    stream = b"".join(_record(b"x" * n) for n in sizes)
    ends, pos = [], 0
    for n in sizes:
        pos += 5 + n
        ends.append(pos)
    starts = [e - 5 - n for e, n in zip(ends, sizes, strict=True)]
    points = sorted({c for c in cuts if 0 < c < len(stream)})
    rb = RecordBoundaries()
    for a, b in itertools.pairwise([0, *points, len(stream)]):
        start, end = rb.feed(stream[a:b])
        inside = [i for i, e in enumerate(ends) if a < e <= b]
        if inside:
            i = inside[-1]
            assert (start, end) == (max(0, starts[i] - a), ends[i] - a)
        else:
            assert (start, end) == (-1, -1)
        assert rb.at_boundary == (b in ends)


def _server_context(files: TlsFiles) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(files.cert, files.key)
    return ctx


Plan = Callable[[list[bytes]], list[bytes]]


async def _tls_exchange(files: TlsFiles, parts: list[bytes], plan: Plan, *, notify: bool,
                        gap_s: float = 0.0) -> StreamCapture:
    """One request over TLS to an in-process server that encrypts each of ``parts`` as its
    own record(s) and sends the ciphertext as ``plan`` cuts it, ``gap_s`` apart."""
    loop = asyncio.get_running_loop()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    port = listener.getsockname()[1]

    async def serve() -> None:
        sock, _ = await loop.sock_accept(listener)
        sock.setblocking(False)
        channel = TlsChannel(_server_context(files), server_side=True)
        try:
            await channel.handshake(loop, sock, 5.0)
            await loop.sock_recv(sock, 65536)  # the request
            for data in plan([channel.encrypt(p) for p in parts]):
                await loop.sock_sendall(sock, data)
                await asyncio.sleep(gap_s)
            if notify:
                channel.close_notify(sock)
        except OSError:
            pass  # the client gave up (a complete response) and closed first
        finally:
            sock.close()

    server = asyncio.create_task(serve())
    endpoint = Endpoint.parse(f"https://127.0.0.1:{port}", ca_bundle=files.cert)
    conn = await Connection.open(endpoint, 5.0)
    capture = StreamCapture()
    try:
        await asyncio.wait_for(conn.stream("POST", "/v1/chat/completions", [
            ("host", "x"), ("content-length", "2")], b"{}", capture), timeout=5)
    finally:
        conn.close()
        await server
        listener.close()
    return capture


def _event(text: str) -> bytes:
    payload = b'{"id": "x", "choices": [{"index": 0, "delta": {"content": "%s"}}]}' % (
        text.encode())
    body = b"data: " + payload + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(body), body)


_PARTS = [_HEADS[0], _event("a"), _event("b"), b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"]


@pytest.mark.parametrize(("plan", "exact"), [
    (lambda r: [r[0], r[1], r[2], r[3]], [True, True, False]),
    # two records in one read: the first event's stamp is only an upper bound
    (lambda r: [r[0], r[1] + r[2], r[3]], [False, True, False]),
    # a read that completes a record and starts the next: its stamp may be the later one's
    (lambda r: [r[0], r[1] + r[2][:10], r[2][10:], r[3]], [False, True, False]),
    (lambda r: [r[0], r[1], r[2] + r[3][:5], r[3][5:]], [True, False, False]),
    # a record cut in two: the read that completes it is exact
    (lambda r: [r[0], r[1][:7], r[1][7:], r[2], r[3]], [True, True, False]),
], ids=["one-per-read", "two-in-one", "partial-next", "partial-after", "record-cut"])
def test_an_event_is_exact_only_when_its_record_ended_the_read(
        tls_files: TlsFiles, plan: Plan, exact: list[bool]) -> None:
    capture = asyncio.run(_tls_exchange(tls_files, _PARTS, plan, notify=True, gap_s=0.03))
    assert capture.error is None and capture.complete, capture.error
    assert [p for _, p in capture.events][-1] == b"[DONE]"
    assert capture.event_exact == exact
    # each event, and the response's end, at the time of the read that completed it
    assert [t for t, _ in capture.events] == [capture.read_times[r] for r in capture.event_read]
    assert capture.end_ns == capture.read_times[-1]
    out = decode_capture(0, 1, capture, "chat")
    assert out.success and out.text == "ab", out.error
    assert out.ttft_text_exact == exact[0]


def test_session_tickets_are_no_hang_up_and_close_notify_is(tls_files: TlsFiles) -> None:
    async def go() -> tuple[bool, bool]:
        loop = asyncio.get_running_loop()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        endpoint = Endpoint.parse(f"https://localhost:{listener.getsockname()[1]}",
                                  ca_bundle=tls_files.cert)

        async def accept() -> tuple[socket.socket, TlsChannel]:
            sock, _ = await loop.sock_accept(listener)
            sock.setblocking(False)
            channel = TlsChannel(_server_context(tls_files), server_side=True)
            await channel.handshake(loop, sock, 5.0)  # and its session tickets
            return sock, channel

        server = asyncio.create_task(accept())
        conn = await Connection.open(endpoint, 5.0)
        sock, channel = await server
        await asyncio.sleep(0.05)  # the tickets are in the client's socket now
        idle = conn.hung_up()
        channel.close_notify(sock)
        await asyncio.sleep(0.05)
        closed = conn.hung_up()
        conn.close()
        sock.close()
        listener.close()
        return idle, closed

    assert asyncio.run(go()) == (False, True)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(_responses, st.lists(st.integers(min_value=0, max_value=400), max_size=6),
       st.lists(st.integers(min_value=0, max_value=600), max_size=6), st.booleans(),
       st.sampled_from(["chat", "completions"]))
def test_arbitrary_responses_over_tls_end_as_over_tcp(
        tls_files: TlsFiles, response: bytes, cuts: list[int], wire_cuts: list[int],
        notify: bool, kind: EndpointKind) -> None:
    """Any bytes, cut into records anywhere and the ciphertext cut anywhere again: the same
    success and text as over plain TCP, and a named error, never an exception or a hang."""
    points = sorted({c for c in cuts if 0 < c < len(response)})
    parts = [p for p in (response[a:b] for a, b in itertools.pairwise(
        [0, *points, len(response)])) if p]

    def plan(records: list[bytes]) -> list[bytes]:
        wire = b"".join(records)
        at = sorted({c for c in wire_cuts if 0 < c < len(wire)})
        return [wire[a:b] for a, b in itertools.pairwise([0, *at, len(wire)])]

    capture = asyncio.run(_tls_exchange(tls_files, parts, plan, notify=notify))
    over_tls = decode_capture(0, 1, capture, kind)
    over_tcp = asyncio.run(_exchange(parts, kind))
    assert over_tls.success == (over_tls.error == "")
    assert "Traceback" not in over_tls.error
    assert over_tls.success == over_tcp.success, (over_tls.error, over_tcp.error)
    if over_tls.success:
        assert over_tls.text == over_tcp.text
        assert over_tls.generated == over_tcp.generated


def test_a_tls_session_broken_while_idle_fails_the_next_request_at_once(
        tls_files: TlsFiles) -> None:
    """A record the client cannot decrypt arrives on the idle connection: the session is
    dead, so the request is not sent; it fails with TLS's words, taking no time."""
    async def garbage(peer: Peer) -> None:
        await peer.send_raw(b"\x17\x03\x03\x00\x20" + b"\x00" * 32)
        await peer.until_closed()

    async def pause(_: Connection) -> None:
        await asyncio.sleep(0.05)  # for the record to reach the client

    ex = asyncio.run(request(garbage, tls=tls_files, before=pause))
    cap = ex.capture
    assert cap.error is not None and cap.error.startswith("TLS error: "), cap.error
    assert cap.start_ns == cap.end_ns > 0 and cap.read_times == [] and ex.closed


def test_a_broken_record_mid_response_is_a_tls_error(tls_files: TlsFiles) -> None:
    async def script(peer: Peer) -> None:
        await peer.read_head()
        await peer.send(_HEADS[0])
        await asyncio.sleep(0.05)  # the head in a read of its own
        await peer.send_raw(b"\x17\x03\x03\x00\x20" + b"\x00" * 32)
        await peer.until_closed()

    ex = asyncio.run(request(script, tls=tls_files))
    cap = ex.capture
    assert cap.error == "TLS error: DECRYPTION_FAILED_OR_BAD_RECORD_MAC"
    assert cap.status == 200 and cap.end_ns == cap.read_times[-1] and ex.closed


@pytest.mark.parametrize("after", ["record", "close_notify"])
def test_a_tls_read_that_ends_the_answer_and_brings_more_keeps_the_answer(
        tls_files: TlsFiles, after: str) -> None:
    """A whole response, then in the same read a record past it or the session's end: the
    response stands as it came, and the connection is not reused."""
    async def script(peer: Peer) -> None:
        await peer.read_head()
        assert peer.tls is not None
        wire = peer.tls.encrypt(STREAM)
        more = peer.tls.encrypt(b"JUNK") if after == "record" else peer.close_notify()
        await peer.send_raw(wire + more)  # one send: one read takes both
        await peer.until_closed()

    ex = asyncio.run(request(script, tls=tls_files))
    assert ex.capture.complete and ex.capture.error is None, ex.capture.error
    assert len(ex.capture.read_times) == 1 and ex.closed
    assert ex.capture.end_ns == ex.capture.read_times[0]
    assert [t for t, _ in ex.capture.events] == [ex.capture.read_times[0]] * 2
    assert decode_capture(0, 1, ex.capture, "completions").text == "a"


@pytest.mark.parametrize(("response", "complete", "error"), [
    # HTTP/1.0: the body runs to the close; close_notify in the data's read ends it whole
    (b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n" + _DATA, True, None),
    (_HEADS[0] + _CHUNK, False, "connection closed by the server mid-response"),  # no last chunk
])
def test_close_notify_in_the_read_of_the_last_bytes_ends_the_response(
        tls_files: TlsFiles, response: bytes, complete: bool, error: str | None) -> None:
    async def script(peer: Peer) -> None:
        await peer.read_head()
        assert peer.tls is not None
        wire = peer.tls.encrypt(response)
        await peer.send_raw(wire + peer.close_notify())
        await peer.until_closed()

    cap = asyncio.run(request(script, tls=tls_files)).capture
    assert (cap.complete, cap.error) == (complete, error)
    assert cap.status == 200 and cap.end_ns == cap.read_times[-1] == cap.read_times[0]
    if complete:
        assert decode_capture(0, 1, cap, "completions").success


def test_a_tls_stream_ended_without_close_notify_is_cut_short(tls_files: TlsFiles) -> None:
    """A bare FIN inside a response over TLS: the close, as over TCP."""
    async def script(peer: Peer) -> None:
        await peer.read_head()
        await peer.send(_HEADS[0] + _CHUNK)
        peer.shutdown()
        await peer.until_closed()

    cap = asyncio.run(request(script, tls=tls_files)).capture
    assert cap.error == "connection closed by the server mid-response" and cap.status == 200
