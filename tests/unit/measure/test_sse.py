"""SSE decoding: every byte split gives the same events; garbage never crashes or hangs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from benchlib.measure._sse import SSEDecoder

STREAM = (b'data: {"a": 1}\n\n: keep-alive comment\r\n\r\ndata:x\r\ndata: y\r\n\r\n'
          b'event: ping\ndata: z\rdata: w\r\r' + b"data: " + b"M" * 300_000 + b"\n\n"
          b"data: [DONE]\n\n")
EXPECTED = [b'{"a": 1}', b"x\ny", b"z\nw", b"M" * 300_000, b"[DONE]"]


def decode(parts: list[bytes]) -> list[bytes]:
    dec = SSEDecoder()
    out: list[bytes] = []
    for part in parts:
        out += dec.feed(part)
    return out + dec.close()


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
