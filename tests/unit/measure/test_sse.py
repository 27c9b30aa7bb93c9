"""SSE decoding: every byte split gives the same events, each returned by the read that
completed it; garbage never crashes or hangs, neither in the decoder alone nor through the
whole client over a loopback socket."""

from __future__ import annotations

import asyncio
import itertools
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlib._wire import enable_rx_timestamps
from benchlib.measure.wire._connection import Connection, StreamCapture
from benchlib.measure.wire._decode import decode_capture
from benchlib.measure.wire._endpoint import Endpoint
from benchlib.measure.wire._request import EndpointKind, RequestOutcome
from benchlib.measure.wire._sse import SSEDecoder

STREAM = (b'data: {"a": 1}\n\n: keep-alive comment\r\n\r\ndata:x\r\ndata: y\r\n\r\n'
          b'event: ping\ndata: z\rdata: w\r\r' + b"data: " + b"M" * 300_000 + b"\n\n"
          b"data: [DONE]\n\n")
EXPECTED = [b'{"a": 1}', b"x\ny", b"z\nw", b"M" * 300_000, b"[DONE]"]


def decode(parts: list[bytes]) -> list[bytes]:
    dec = SSEDecoder()
    out: list[bytes] = []
    for part in parts:
        out += dec.feed(part)
    return out


def test_whole_stream() -> None:
    assert decode([STREAM]) == EXPECTED


def test_byte_by_byte_small() -> None:
    small = STREAM.replace(b"M" * 300_000, b"MM")
    assert decode([bytes([b]) for b in small]) == [*EXPECTED[:3], b"MM", b"[DONE]"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=40))
def test_any_split_gives_identical_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    parts = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert decode(parts) == EXPECTED


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=20))
def test_arbitrary_bytes_never_crash(parts: list[bytes]) -> None:
    events = decode(parts)
    assert all(isinstance(e, bytes) for e in events)


def test_crlf_split_between_cr_and_lf() -> None:
    assert decode([b"data: a\r", b"\n\r", b"\n"]) == [b"a"]


def _split(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c for c in cuts if 0 < c < len(stream)})
    return [stream[a:b] for a, b in itertools.pairwise([0, *points, len(stream)])]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=40))
def test_each_event_comes_from_the_read_that_completed_it(cuts: list[int]) -> None:
    """After every read, the events returned so far are exactly those the bytes so far
    complete (a fresh decoder given them at once says which): none held back to a later
    read, as a wire stamp taken at that read would then be late, and none twice."""
    small = STREAM.replace(b"M" * 300_000, b"M" * 40)
    dec, seen, upto = SSEDecoder(), [], 0
    for part in _split(small, cuts):
        seen += dec.feed(part)
        upto += len(part)
        assert seen == SSEDecoder().feed(small[:upto]), (upto, small[:upto])
    assert seen == [*EXPECTED[:3], b"M" * 40, b"[DONE]"]


@pytest.mark.parametrize(("parts", "per_read"), [
    # a blank line that is a lone CR, held at the end of a read, is known to end the event as
    # soon as the next byte is not LF: the event belongs to that next read
    ([b"data: a\n\r", b"x"], [[], [b"a"]]),
    ([b"data: a\n\r", b"\r"], [[], [b"a"]]),
    ([b"data: a", b"\r\rx"], [[], [b"a"]]),
    ([b"data: a", b"\r\r"], [[], []]),  # the last CR may yet be a CRLF's: held
    ([b"data: a", b"\r", b"\r", b"x"], [[], [], [], [b"a"]]),
    # a read that starts with the LF of a blank line, a CR-ended line after it
    ([b"data: a\n", b"\n: c\r\n"], [[], [b"a"]]),
    ([b"data: a\n", b"\ndata: b\r\n\r\n"], [[], [b"a", b"b"]]),
    # a long line spread over reads, ended by a CR, its blank line a CRLF split in two
    ([b"data: ", b"lo", b"ng", b"\r\r", b"\n"], [[], [], [], [], [b"long"]]),
])
def test_events_per_read(parts: list[bytes], per_read: list[list[bytes]]) -> None:
    dec = SSEDecoder()
    assert [dec.feed(p) for p in parts] == per_read


@pytest.mark.parametrize(("stream", "events"), [
    (b"data\n\n", [b""]),                       # a data field with no colon: empty value
    (b"data:\n\n", [b""]),
    (b"data:  two spaces\n\n", [b" two spaces"]),  # only one space after the colon goes
    (b"data:x\ndata\n\n", [b"x\n"]),
    (b"datax: y\n\n", []),                      # another field: ignored, nothing dispatched
    (b"\n\r\n: c\n\ndata: a\n\n", [b"a"]),      # blank lines before any data dispatch nothing
    (b"data: a", []),                           # no blank line by the end: dropped
])
def test_fields_and_dispatch(stream: bytes, events: list[bytes]) -> None:
    assert decode([stream]) == events
    assert decode([bytes([b]) for b in stream]) == events


def test_pending_says_whether_an_event_is_unfinished() -> None:
    dec = SSEDecoder()
    assert not dec.pending
    dec.feed(b"data: a\n")
    assert dec.pending  # its data line is held, waiting for the blank line
    dec.feed(b"\n")
    assert not dec.pending
    dec.feed(b": comment")
    assert dec.pending  # a line not yet ended
    dec.feed(b"\n")
    assert not dec.pending
    dec.feed(b"data: b\r")
    assert dec.pending


# --------------------------------------------------------------------------- the whole path
# Arbitrary server bytes through a real loopback TCP connection: h11, the SSE decoder and
# decode_capture must end every request with an outcome (a named error or a success), never
# an exception and never a hang, whatever the server sends before it closes.

_HEADS = [
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 40\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n",
    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
    b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n",
]
_FRAGMENTS = [
    b"data: ", b"data:", b"[DONE]", b"\n", b"\r", b"\r\n", b"\n\n", b": ping\n", b"event: x\n",
    b'{"id": "x", "choices": [{"index": 0, "delta": {"content": "a"}}]}',
    b'{"id": "x", "choices": [{"index": 0, "text": "b", "finish_reason": "length"}]}',
    b'{"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}',
    b'{"choices": [{"delta": {"reasoning_content": "r", "tool_calls": [{}]}}]}',
    b'{"error": {"message": "boom"}}', b'{"choices": null}', b'{"choices": [1]}', b"[]",
    b'{"usage": {"completion_tokens": "x"}}', b'{"choices": [{"delta": 5}]}', b"\xff\xfe",
]


def _chunked(body: bytes, sizes: list[int]) -> bytes:
    out, pos = b"", 0
    for size in [*sizes, len(body)]:
        piece = body[pos:pos + max(size, 1)]
        if not piece:
            break
        out += b"%x\r\n%s\r\n" % (len(piece), piece)
        pos += len(piece)
    return out + b"0\r\n\r\n"


_event = st.one_of(  # mostly well-formed events, some pieces, some noise
    st.sampled_from([f for f in _FRAGMENTS if f.startswith((b"{", b"["))]).map(
        lambda payload: b"data: " + payload + b"\n\n"),
    st.sampled_from(_FRAGMENTS), st.binary(max_size=12))
_sse = st.builds(lambda events, done: b"".join(events) + (b"data: [DONE]\n\n" if done else b""),
                 st.lists(_event, max_size=12), st.booleans())
_http_like = st.builds(
    lambda head, body, sizes, chunk, cut: (head + (_chunked(body, sizes) if chunk else body))
    [:cut if cut else None],
    st.sampled_from(_HEADS), _sse, st.lists(st.integers(1, 64), max_size=8), st.booleans(),
    st.one_of(st.none(), st.integers(0, 400)))
_responses = st.one_of(st.binary(max_size=300), _http_like)


_LISTENER: socket.socket | None = None


def _pair() -> tuple[socket.socket, socket.socket]:
    """A connected loopback TCP pair (client, server), from one listener kept for the run."""
    global _LISTENER
    if _LISTENER is None:
        _LISTENER = socket.socket()
        _LISTENER.bind(("127.0.0.1", 0))
        _LISTENER.listen(64)
    client = socket.create_connection(_LISTENER.getsockname())
    server, _ = _LISTENER.accept()
    client.setblocking(False)
    server.setblocking(False)
    return client, server


async def _exchange(parts: list[bytes], kind: EndpointKind) -> RequestOutcome:
    loop = asyncio.get_running_loop()
    client, server = _pair()
    endpoint = Endpoint("127.0.0.1", 1, "")
    conn = Connection(endpoint, client, enable_rx_timestamps(client))

    async def serve() -> None:
        try:
            await loop.sock_recv(server, 65536)  # the request, so close() sends FIN, not RST
            for part in parts:
                await loop.sock_sendall(server, part)
                await asyncio.sleep(0)
        except OSError:
            pass  # the client gave up (a complete response) and closed first
        finally:
            server.close()

    capture = StreamCapture()
    feeder = asyncio.create_task(serve())
    try:
        await asyncio.wait_for(conn.stream("POST", "/v1/chat/completions", [
            ("host", "x"), ("content-length", "2")], b"{}", capture), timeout=5)
    finally:
        conn.close()
        await feeder
    return decode_capture(0, 1, capture, kind)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_responses, st.lists(st.integers(min_value=0, max_value=400), max_size=6),
       st.sampled_from(["chat", "completions"]))
def test_arbitrary_responses_through_the_whole_client(response: bytes, cuts: list[int],
                                                      kind: EndpointKind) -> None:
    points = sorted({c for c in cuts if c < len(response)})
    parts = [response[a:b] for a, b in itertools.pairwise([0, *points, len(response)])]
    out = asyncio.run(_exchange([p for p in parts if p], kind))
    assert out.success == (out.error == "")
    if out.success:
        assert out.ttft_ns is not None and out.latency_ns is not None
    else:
        assert out.error and "Traceback" not in out.error


def test_a_valid_stream_succeeds_through_the_whole_client() -> None:
    body = (b'data: {"id": "x", "choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n'
            b'data: {"id": "x", "choices": [{"index": 0, "delta": {"content": "b"}}]}\n\n'
            b"data: [DONE]\n\n")
    out = asyncio.run(_exchange([_HEADS[0], _chunked(body, [30, 50])], "chat"))
    assert out.success and out.text == "ab" and out.response_id == "x", out.error
