"""TLS bytes that reached the socket before the request was sent, read by the request's
reader: their kernel stamp lies before the request's start. Records that carry no data yet
(a record's first part, like late session tickets) are no part of the request: no read is
counted and no clock step is flagged. A record with data that came before the request cannot
be its answer's: it is read as one, stamped at the send and flagged as a clock step (the
rule for a stamp outside [send, read]); a broken one fails the request with TLS's words.

To leave bytes for the reader, the idle connection's check before the send must stop short:
it stops at the first record with data, after one read of 256 KiB. The peer sends exactly
that much in whole records, then more; the client's receive buffer is made large enough to
hold it all."""

from __future__ import annotations

import asyncio

from benchlib._tls import TlsChannel
from benchlib.measure.wire._connection import StreamCapture
from benchlib.measure.wire._decode import decode_capture
from tests._tls_files import TlsFiles

from ._peer import Peer, post_once, roomy, serve

#: one read of the idle check (benchlib._tls._READ_SIZE)
IDLE_READ = 1 << 18
#: TLS 1.3 adds 22 bytes to a record: header 5, content type 1, tag 16
_OVERHEAD = 22
_DATA = b'data: {"id": "x", "choices": [{"index": 0, "text": "a"}]}\n\ndata: [DONE]\n\n'
STREAM = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n"
          % len(_DATA)) + _DATA


def _idle_read_of_records(tls: TlsChannel) -> bytes:
    """Whole records (with data the client will drop) filling exactly one idle-check read."""
    full = 15 * (16384 + _OVERHEAD)
    wire = tls.encrypt(b"j" * (15 * 16384 + IDLE_READ - full - _OVERHEAD))
    assert len(wire) == IDLE_READ
    return wire


async def _exchange(tls_files: TlsFiles, early: str) -> StreamCapture:
    """One request whose peer, before it, sends an idle-check read of records and then the
    first bytes of the response's record (``early`` "part"; the rest after the request), the
    whole response ("whole") or a broken record ("broken")."""
    queued, asked = asyncio.Event(), asyncio.Event()

    async def script(peer: Peer) -> None:
        assert peer.tls is not None
        await asyncio.wait_for(asked.wait(), 5)  # the client has read the session tickets
        records = _idle_read_of_records(peer.tls)
        response = peer.tls.encrypt(STREAM)  # after them: records are numbered in order
        before = {"part": response[:40], "whole": response,
                  "broken": b"\x17\x03\x03\x00\x20" + b"\x00" * 32}[early]
        await peer.send_raw(records + before)
        await asyncio.sleep(0.05)  # for the bytes to reach the client's socket
        queued.set()
        await peer.read_head()
        await asyncio.sleep(0.05)  # the early bytes are read on their own first
        if early == "part":
            await peer.send_raw(response[40:])
        await peer.until_closed()

    endpoint, played = await serve(script, tls_files)
    conn = await roomy(endpoint)
    assert conn.kernel_clock  # the rule is about kernel stamps
    await asyncio.sleep(0.05)
    assert not conn.hung_up()  # reads the session tickets
    asked.set()
    await asyncio.wait_for(queued.wait(), 5)
    return await post_once(conn, played)


def test_a_records_first_bytes_sent_before_the_request_are_not_counted(
        tls_files: TlsFiles) -> None:
    capture = asyncio.run(_exchange(tls_files, "part"))
    assert capture.complete and capture.error is None, capture.error
    assert len(capture.read_times) == 1 and capture.clamped_reads == 0
    out = decode_capture(0, 1, capture, "completions")
    assert out.success and out.text == "a" and not out.clock_stepped


def test_a_whole_answer_sent_before_the_request_is_flagged(tls_files: TlsFiles) -> None:
    capture = asyncio.run(_exchange(tls_files, "whole"))
    assert capture.complete and capture.error is None, capture.error
    assert capture.read_times == [capture.start_ns] and capture.clamped_reads == 1
    assert decode_capture(0, 1, capture, "completions").clock_stepped


def test_a_broken_record_sent_before_the_request_fails_it(tls_files: TlsFiles) -> None:
    capture = asyncio.run(_exchange(tls_files, "broken"))
    assert capture.error == "TLS error: DECRYPTION_FAILED_OR_BAD_RECORD_MAC"
    assert capture.read_times == [] and capture.end_ns > capture.start_ns
