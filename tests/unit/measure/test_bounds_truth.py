"""The per-request bounds contain the truth, for any arrival pattern and any way the client's
reads cut it (issue 39, item 3).

The scripted server's streams (a role chunk at once, ``choices: []`` events, content events,
the usage event, ``[DONE]``) are cut into TCP segments anywhere, each arriving at its own
instant (never before the one before it), and the client drains them in reads at any later
instants, each read taking every segment queued so far, stamped with the arrival of its
newest, or unstamped (timed when read). The capture is filled as
:meth:`Connection._on_readable` fills it (the SSE decoder finds the read that completes each
event; an event is exact when nothing of a later one came in its read) and then
:func:`decode_capture` and the timing check's bounds must hold every true arrival: the last
byte of the first text event (TTFT), of the last choices event (E2EL), and TPOT between them.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from benchlib.measure import StreamCapture, decode_capture
from benchlib.measure.stats._metrics import _figure_bounds
from benchlib.measure.wire._sse import SSEDecoder
from benchlib.measure.wire._timing import event_times

MS = 1_000_000
START = 1_000 * MS


def _chat(delta: dict[str, Any], choices: bool = True) -> bytes:
    body = {"id": "c", "choices": [{"index": 0, "delta": delta}] if choices else []}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _stream(role: bool, empty_choices: bool, tokens: int) -> list[bytes]:
    """One streamed answer as the scripted server writes it, event by event."""
    events = [_chat({"role": "assistant", "content": ""})] if role else []
    for _ in range(tokens):
        if empty_choices:
            events.append(_chat({}, choices=False))
        events.append(_chat({"content": "x"}))
    usage = {"id": "c", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": tokens}}
    return [*events, b"data: " + json.dumps(usage).encode() + b"\n\n", b"data: [DONE]\n\n"]


@st.composite
def _wire(draw: st.DrawFn) -> tuple[StreamCapture, dict[str, int], list[int]]:
    """A capture of one streamed answer under a drawn arrival and read pattern; the true
    TTFTs and E2EL (ns, the last byte of the first choices event, of the first text event,
    of the last choices event) and every event's true arrival."""
    role, empty, tokens = draw(st.booleans()), draw(st.booleans()), draw(st.integers(1, 6))
    events = _stream(role, empty, tokens)
    body = b"".join(events)
    ends = [sum(len(e) for e in events[:k + 1]) for k in range(len(events))]
    cuts = sorted(set(draw(st.lists(st.integers(1, len(body) - 1), max_size=12))))
    bounds = [0, *cuts, len(body)]
    # segment k holds body[bounds[k]:bounds[k + 1]] and arrives at arrive[k]
    arrive: list[int] = []
    t = START + draw(st.integers(0, 50 * MS))
    for _ in range(len(bounds) - 1):
        t += draw(st.sampled_from([0, 1, 1_000, 300_000, 5 * MS]))
        arrive.append(t)
    # reads: consecutive runs of segments, each drained after its newest arrived and before
    # the next segment did (a read takes everything queued)
    groups = draw(st.lists(st.booleans(), min_size=len(arrive) - 1, max_size=len(arrive) - 1))
    cap = StreamCapture(start_ns=START, status=200, content_type="text/event-stream",
                        complete=True, kernel_clock=True)
    decoder = SSEDecoder()
    seg = 0
    while seg < len(arrive):
        last = seg
        while last < len(groups) and groups[last]:
            last += 1
        nxt = arrive[last + 1] if last + 1 < len(arrive) else arrive[last] + 10 * MS
        user = draw(st.integers(arrive[last], max(arrive[last], nxt - 1)))
        stamped = draw(st.booleans())
        read = len(cap.read_times)
        cap.read_times.append(arrive[last] if stamped else user)
        cap.read_user.append(user)
        cap.read_stamped.append(stamped)
        first = len(cap.events)
        for payload in decoder.feed(body[bounds[seg]:bounds[last + 1]]):
            cap.events.append((cap.read_times[-1], payload))
            cap.event_read.append(read)
            cap.event_exact.append(False)
            cap.saw_done = cap.saw_done or payload == b"[DONE]"
        if len(cap.events) > first and not decoder.pending:
            cap.event_exact[-1] = True
        seg = last + 1
    cap.end_ns = cap.read_times[-1]

    def arrival_of(event: int) -> int:
        """When the segment holding the event's last byte arrived."""
        byte = ends[event] - 1
        return arrive[next(k for k in range(len(arrive)) if bounds[k + 1] > byte)]

    first_text = (1 if role else 0) + (1 if empty else 0)
    last_choice = len(events) - 3  # before the usage event and [DONE]
    return cap, {"ttft_text": arrival_of(first_text) - START,
                 "ttft": arrival_of(0 if role else first_text) - START,
                 "e2el": arrival_of(last_choice) - START, "tokens": tokens}, [
        arrival_of(e) for e in range(len(events))]


@given(_wire())
def test_every_event_bound_holds_its_true_arrival(
        wire: tuple[StreamCapture, dict[str, int], list[int]]) -> None:
    """Per event: the lower bound is at or before the true arrival, the time at or after;
    an exact one is the arrival."""
    cap, _, truths = wire
    times = event_times(cap)
    assert len(times.upper) == len(truths)
    for lower, upper, exact, truth in zip(times.lower, times.upper, times.exact, truths,
                                          strict=True):
        assert START <= lower <= truth <= upper
        assert not exact or lower == truth == upper


@given(_wire())
def test_request_bounds_contain_the_true_ttft_e2el_and_tpot(
        wire: tuple[StreamCapture, dict[str, int], list[int]]) -> None:
    """TTFT (vLLM's and to the first text), E2EL and TPOT: lower ≤ truth ≤ value, whatever
    the segments and reads."""
    cap, truth, _ = wire
    o = decode_capture(0, 3, cap, "chat")
    assert o.success, o.error
    assert o.output_tokens == truth["tokens"]
    assert o.ttft_text_lower_ns is not None and o.ttft_text_ns is not None
    assert o.ttft_text_lower_ns <= truth["ttft_text"] <= o.ttft_text_ns
    assert o.ttft_text_exact <= (o.ttft_text_lower_ns == o.ttft_text_ns)
    bounds = _figure_bounds([o])
    for metric in ("ttft", "ttft_text", "e2el"):
        (value,), (lower,), (upper,) = bounds[metric]
        assert lower <= truth[metric] / MS <= upper and value == upper, metric
    n = truth["tokens"]
    if n > 1:
        (value,), (lower,), (upper,) = bounds["tpot"]
        true_tpot = (truth["e2el"] - truth["ttft"]) / (n - 1) / MS
        assert lower - 1e-9 <= true_tpot <= upper + 1e-9 and lower <= value <= upper
    else:
        assert bounds["tpot"] == ([], [], [])
