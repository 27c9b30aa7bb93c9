"""What one connection's reader records of a response, against a scripted loopback peer
(:mod:`._peer`): a body kept whole across reads, the ``[DONE]`` marker, the scripted server's
header, an interim 100, bytes that came before the request, which events are exact; and
whether an idle connection's server hung up, asked without reading."""

from __future__ import annotations

import asyncio

import pytest

from benchlib.measure.wire._connection import Connection, StreamCapture
from benchlib.measure.wire._decode import decode_capture

from ._peer import (
    DATA,
    SSE_HEAD,
    STREAM,
    Peer,
    answer,
    chunk,
    parts,
    post_once,
    roomy,
    run,
    serve,
)


@pytest.mark.parametrize(("act", "hung"), [
    ("nothing", False), ("send", True), ("fin", True), ("reset", True)])
def test_an_idle_connection_tells_whether_the_server_hung_up(act: str, hung: bool) -> None:
    """Checked before a connection is reused: silence is no hang-up; a close, a reset or
    bytes nobody asked for (a 408 sent before closing) are."""
    async def go() -> bool:
        acted = asyncio.Event()

        async def script(peer: Peer) -> None:
            if act == "send":
                await peer.send(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n\r\n")
            elif act == "fin":
                peer.shutdown()
            elif act == "reset":
                peer.reset()
            await asyncio.sleep(0.05)  # for the bytes or the RST to reach the client
            acted.set()
            if act != "reset":
                await peer.until_closed()

        endpoint, played = await serve(script)
        conn = await Connection.open(endpoint, 5.0)
        await asyncio.wait_for(acted.wait(), 5)
        hung_up = conn.hung_up()
        conn.close()
        await played
        return hung_up

    assert asyncio.run(go()) is hung


def test_asking_whether_the_server_hung_up_reads_nothing() -> None:
    """The check peeks: a byte nobody asked for is still there for the next look."""
    async def go() -> tuple[bool, bool]:
        sent = asyncio.Event()

        async def one_byte(peer: Peer) -> None:
            await peer.send(b"\n")
            await asyncio.sleep(0.05)  # for the byte to reach the client
            sent.set()
            await peer.until_closed()

        endpoint, played = await serve(one_byte)
        conn = await Connection.open(endpoint, 5.0)
        await asyncio.wait_for(sent.wait(), 5)
        looks = conn.hung_up(), conn.hung_up()
        conn.close()
        await played
        return looks

    assert asyncio.run(go()) == (True, True)


def test_a_body_that_is_no_event_stream_is_kept_whole_across_reads() -> None:
    """An error answered with the stream's content type is a body, not events: only a 200
    is decoded as SSE; and every read's part of a body is kept."""
    head = (b"HTTP/1.1 503 Busy\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n")
    cap = run(parts(head, chunk(b"data: busy\n\n"), chunk(b"data: again\n\n"),
                              b"0\r\n\r\n")).capture
    assert cap.complete and len(cap.read_times) == 4
    assert bytes(cap.body) == b"data: busy\n\ndata: again\n\n" and cap.events == []


@pytest.mark.parametrize("done", [True, False])
def test_the_done_marker_is_seen_only_when_sent(done: bool) -> None:
    data = DATA if done else DATA.replace(b"data: [DONE]\n\n", b"")
    cap = run(answer(SSE_HEAD + chunk(data) + b"0\r\n\r\n")).capture
    assert cap.complete and cap.saw_done is done
    assert [p for _, p in cap.events][-1] == (b"[DONE]" if done else data[6:-2])


@pytest.mark.parametrize("header", [b"x-benchlib-synthetic: 1\r\n", b"x-other: 1\r\n"])
def test_the_scripted_servers_header_marks_its_answers(header: bytes) -> None:
    head = STREAM.replace(b"content-type: text/event-stream", b"Content-Type: Text/Event-Stream")
    cap = run(answer(head.replace(b"\r\n\r\n", b"\r\n" + header + b"\r\n", 1))).capture
    assert cap.complete and cap.synthetic is (b"synthetic" in header)
    assert cap.content_type == "text/event-stream"  # compared in lower case


def test_an_interim_100_in_the_answers_read_is_passed_over() -> None:
    cap = run(answer(b"HTTP/1.1 100 Continue\r\n\r\n" + STREAM)).capture
    assert cap.complete and cap.status == 200 and cap.error is None
    assert decode_capture(0, 1, cap, "completions").text == "a"


def test_bytes_that_came_before_the_request_are_stamped_at_its_send_and_flagged() -> None:
    """A stamp before the send cannot be an answer's: like a clock step, each such read is
    clamped to [send, read] and counted (a 408 sent on the idle connection, read by the
    request, its 300 KiB body in two reads)."""
    body = b"x" * (300 << 10)

    async def go() -> StreamCapture:
        opened, sent = asyncio.Event(), asyncio.Event()

        async def early(peer: Peer) -> None:
            await asyncio.wait_for(opened.wait(), 5)
            await peer.send(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: %d\r\n\r\n%s"
                            % (len(body), body))
            await asyncio.sleep(0.05)  # for the bytes to reach the client
            sent.set()
            await peer.until_closed()

        endpoint, played = await serve(early)
        conn = await roomy(endpoint)
        opened.set()
        await asyncio.wait_for(sent.wait(), 5)
        return await post_once(conn, played)

    cap = asyncio.run(go())
    assert cap.status == 408 and cap.complete and bytes(cap.body) == body
    assert cap.read_stamped == [True, True] and cap.clamped_reads == 2
    assert cap.read_times == [cap.start_ns] * 2 and cap.start_ns < cap.read_user[0]


@pytest.mark.parametrize(("early", "exact"), [(0, True), (1, False)])
def test_an_event_is_exact_only_if_no_later_byte_came_in_its_read(early: int,
                                                                  exact: bool) -> None:
    """Even the first digit of the next chunk's size in the read makes the event's stamp an
    upper bound: that byte arrived with it."""
    event = b'data: {"choices": [{"text": "a"}]}\n\n'
    size = b"%x\r\n" % len(event)
    cap = run(parts(SSE_HEAD, chunk(event) + size[:early],
                    size[early:] + event + b"\r\n0\r\n\r\n")).capture
    assert cap.complete and len(cap.read_times) == 3, cap.error
    assert cap.event_exact[0] is exact and cap.event_read[0] == 1
