"""Incremental Server-Sent Events decoder: bytes in any split, event payloads out.

Follows the WHATWG event-stream rules that matter for OpenAI-compatible servers: lines end in
CRLF, LF or CR; ``data:`` lines (one optional space after the colon) accumulate and are joined
with LF; a blank line dispatches the event; comments (``:``) and other fields are ignored. A
CR at the very end of the input is held back until the next byte says whether LF follows, so
every split of the same stream decodes to the same events, each returned by the very read
that completed it. At the end of the stream an event without its blank line is dropped, as the
standard says: nothing is left to flush, so there is no ``close``. Work per byte stays in C
(``bytes.find``), and a line that spans many reads is collected piece by piece and joined
once, so a multi-megabyte event costs linear time however finely it is split.
"""

from __future__ import annotations

__all__ = ["SSEDecoder"]


class SSEDecoder:
    """Feed raw body bytes with :meth:`feed`; get back the ``data`` payloads it completed."""

    __slots__ = ("_buf", "_data", "_parts")

    def __init__(self) -> None:
        #: the unfinished line: no CR or LF in it, except possibly a CR at its very end
        self._buf = b""
        #: later pieces of that unfinished line (no CR or LF in them), joined when it ends
        self._parts: list[bytes] = []
        #: the data lines of the event being read (an empty line still counts: ``data:``)
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """Decode ``chunk`` and return the payloads of every event it completed, in order."""
        if self._buf and not self._buf.endswith(b"\r") and b"\n" not in chunk \
                and b"\r" not in chunk:
            self._parts.append(chunk)  # the long line goes on: nothing to scan again
            return []
        if self._parts:
            self._buf = b"".join([self._buf, *self._parts])
            self._parts = []
        buf = self._buf + chunk  # CPython returns chunk itself when _buf is empty: no copy
        events: list[bytes] = []
        start = 0
        end = len(buf)
        while True:  # ends at the first line with no CR or LF after it
            lf = buf.find(b"\n", start)
            cr = buf.find(b"\r", start, lf if lf >= 0 else end)
            if cr >= 0:
                if cr == end - 1:
                    break  # a CR at the end: wait to see whether LF follows
                line_end = cr
                nxt = cr + 2 if buf[cr + 1] == 0x0A else cr + 1
            elif lf >= 0:
                line_end = lf
                nxt = lf + 1
            else:
                break
            self._line(buf[start:line_end], events)
            start = nxt
        self._buf = buf[start:]
        return events

    @property
    def pending(self) -> bool:
        """Whether bytes of an event not yet complete are held (a line, or data lines
        waiting for their blank line): then the last event returned was not the last thing
        its read carried."""
        return bool(self._buf or self._parts or self._data)

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self._data:
                events.append(b"\n".join(self._data))
                self._data = []
            return
        if line.startswith(b"data"):
            rest = line[4:]
            if not rest:
                value = b""
            elif rest[0] == 0x3A:  # ':'
                value = rest[2:] if rest[1:2] == b" " else rest[1:]
            else:
                return  # a field named e.g. "dataX": ignored
            self._data.append(value)
