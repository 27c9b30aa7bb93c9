"""Interpreting captured streams: TTFT, ITL, E2EL, tokens and named faults."""

from __future__ import annotations

import json
from typing import Any

from benchlib.measure import StreamCapture, build_body, decode_capture
from benchlib.measure.wire._decode import chunk_token_counts
from benchlib.measure.wire._request import Prompt

MS = 1_000_000


def capture(events: list[tuple[int, Any]], *, done: bool = True, status: int = 200,
            ctype: str = "text/event-stream") -> StreamCapture:
    cap = StreamCapture(start_ns=1_000 * MS, status=status, content_type=ctype, complete=True)
    for t, obj in events:
        cap.events.append((1_000 * MS + t * MS, json.dumps(obj).encode()))
    if done:
        cap.events.append((1_000 * MS + 999 * MS, b"[DONE]"))
        cap.saw_done = True
    return cap


def chat(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def usage(n: int) -> dict[str, Any]:
    return {"id": "c1", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": n}}


def test_role_chunk_starts_vllm_ttft_but_not_ours() -> None:
    cap = capture([(1, chat({"role": "assistant", "content": ""})), (20, chat({"content": "a"})),
                   (25, chat({"content": "b"})), (30, chat({"content": "c"}, "stop")),
                   (31, usage(6))])
    out = decode_capture(0, 5, cap, "chat")
    assert out.success and out.ttft_text_ns == 20 * MS
    assert out.ttft_ns == 1 * MS  # vLLM: the first event with non-empty choices
    assert out.itl_ns == [19 * MS, 5 * MS, 5 * MS]  # vLLM: one gap per later choices event
    assert out.text_gaps_ns == [5 * MS, 5 * MS] and all(out.text_gap_measured)
    assert out.latency_ns == 30 * MS
    assert out.output_tokens == 6 and out.output_tokens_source == "usage"
    assert out.server_prompt_tokens == 7 and out.finish_reason == "stop"


def test_reasoning_and_tool_calls_count_as_generated() -> None:
    cap = capture([(3, chat({"reasoning_content": "hmm"})), (4, chat({"reasoning": "ok"})),
                   (9, chat({"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]})),
                   (10, usage(3))])
    out = decode_capture(0, 5, cap, "chat")
    assert out.ttft_text_ns == 3 * MS
    assert out.reasoning == "hmmok" and out.tool_text == "f{}"
    assert out.generated == "hmmokf{}"


def test_completions_text() -> None:
    ev = [(2, {"id": "x", "choices": [{"text": "hi"}]}),
          (4, {"id": "x", "choices": [{"text": " there", "finish_reason": "length"}]})]
    out = decode_capture(0, 5, capture(ev), "completions")
    assert out.success and out.text == "hi there" and out.output_tokens_source == "none"


def test_faults_are_named() -> None:
    assert decode_capture(
        0, 1, StreamCapture(status=500, body=bytearray(b'{"error": {"message": "boom"}}')),
        "chat").error == "HTTP 500: boom"
    assert "JSON body" in decode_capture(0, 1, capture([], ctype="application/json"),
                                         "chat").error
    assert "without [DONE]" in decode_capture(0, 1, capture([(1, chat({"content": "a"}))],
                                                            done=False), "chat").error
    err = decode_capture(0, 1, capture([(1, {"error": {"message": "overloaded"}})]), "chat")
    assert err.error == "server error in stream: overloaded" and not err.success
    bad = capture([])
    bad.events.insert(0, (5, b"{not json"))
    assert "not valid JSON" in decode_capture(0, 1, bad, "chat").error
    assert decode_capture(0, 1, capture([(1, usage(0))]), "chat").error == (
        "stream carried no generated text")


def test_build_body_matches_reference_shape() -> None:
    body = json.loads(build_body(Prompt("hi", 1, 8), "completions", "m", ignore_eos=True))
    assert body["max_tokens"] == 8 and body["stream_options"] == {"include_usage": True}
    assert body["ignore_eos"] is True and body["stream"] is True
    body = json.loads(build_body(Prompt("hi", 1, 8), "chat", "m", ignore_eos=False))
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["max_completion_tokens"] == 8 and "ignore_eos" not in body


def test_chunk_token_counts_scale_to_server_total() -> None:
    ev = [(1, {"choices": [{"text": "aaa"}]}), (2, {"choices": [{"text": "bbb"}]}), (3, usage(6))]
    out = decode_capture(0, 1, capture(ev), "completions")
    assert chunk_token_counts(out, None) == [3.0, 3.0]


def test_wrong_shapes_are_named_not_raised() -> None:
    for obj in ({"choices": [1]}, {"choices": [{"delta": 5}]}, {"choices": "abc"},
                {"choices": [{"delta": {"content": 5}}]}, {"choices": {"a": 1}},
                {"usage": {"completion_tokens": "x"}}, {"choices": [{"delta": {"reasoning": ["x"]}}]}):
        out = decode_capture(0, 1, capture([(1, obj)]), "chat")
        assert not out.success and "has an unexpected shape" in out.error, (obj, out.error)
    deep = capture([])
    deep.events.insert(0, (5, b"[" * 100_000 + b"]" * 100_000))
    assert "not valid JSON" in decode_capture(0, 1, deep, "chat").error


def _read_capture(reads: list[tuple[int, bool]], events: list[tuple[int, bool, Any]],
                  user_lag_ms: int = 0, drift_ns: int = 0) -> StreamCapture:
    """A capture with read records: ``reads`` = (arrival ms, stamped); ``events`` = (read,
    exact, payload)."""
    cap = StreamCapture(start_ns=1_000 * MS, status=200, content_type="text/event-stream",
                        complete=True, saw_done=True, kernel_clock=True,
                        clock_drift_ns=drift_ns)
    for t, stamped in reads:
        cap.read_times.append(1_000 * MS + t * MS)
        cap.read_user.append(1_000 * MS + (t + user_lag_ms) * MS)
        cap.read_stamped.append(stamped)
    for r, exact, obj in events:
        payload = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        cap.events.append((cap.read_times[r], payload))
        cap.event_read.append(r)
        cap.event_exact.append(exact)
    cap.end_ns = cap.read_times[-1]
    return cap


def test_ttft_bounds_exact_and_coalesced() -> None:
    # headers at 1 ms; the first two text events read together at 30 ms; the third alone
    cap = _read_capture([(1, True), (30, True), (40, True), (41, True)],
                        [(1, False, chat({"content": "a"})), (1, True, chat({"content": "b"})),
                         (2, True, chat({"content": "c"})), (3, False, usage(3)),
                         (3, False, b"[DONE]")])
    out = decode_capture(0, 5, cap, "chat")
    assert out.success and out.clock == "kernel"
    # "a" came in a read that also carried "b": its stamp is an upper bound, the headers' read
    # a lower bound
    assert out.ttft_text_ns == 30 * MS and out.ttft_text_lower_ns == 1 * MS
    assert not out.ttft_text_exact
    assert out.text_gaps_ns == [0, 10 * MS] and out.text_gap_measured == [False, True]
    assert out.coalesced_gaps == 1


def test_exact_ttft_when_the_event_ends_its_read() -> None:
    cap = _read_capture([(1, True), (30, True), (40, True)],
                        [(1, True, chat({"content": "a"})), (2, False, usage(1)),
                         (2, False, b"[DONE]")], user_lag_ms=2)
    out = decode_capture(0, 5, cap, "chat")
    assert out.ttft_text_exact and out.ttft_text_ns == out.ttft_text_lower_ns == 30 * MS
    assert out.read_lags_ns == [2 * MS] * 3


def test_first_read_is_bounded_below_by_the_send() -> None:
    cap = _read_capture([(30, True)], [(0, False, chat({"content": "a"})), (0, False, usage(1)),
                                       (0, False, b"[DONE]")])
    out = decode_capture(0, 5, cap, "chat")
    assert out.ttft_text_ns == 30 * MS and out.ttft_text_lower_ns == 0


def test_unstamped_reads_are_userspace_bounds() -> None:
    cap = _read_capture([(1, False), (30, False)],
                        [(1, True, chat({"content": "a"})), (1, False, usage(1)),
                         (1, False, b"[DONE]")])
    out = decode_capture(0, 5, cap, "chat")
    assert out.clock == "userspace" and not out.ttft_text_exact
    assert out.ttft_text_lower_ns == 1 * MS


def test_a_clock_step_falls_back_to_read_times_and_is_flagged() -> None:
    cap = _read_capture([(1, True), (30, True)],
                        [(1, True, chat({"content": "a"})), (1, False, usage(1)),
                         (1, False, b"[DONE]")], user_lag_ms=3, drift_ns=50 * MS)
    out = decode_capture(0, 5, cap, "chat")
    assert out.clock_stepped and out.clock == "userspace"
    assert out.ttft_text_ns == 33 * MS and out.ttft_text_lower_ns == 4 * MS
    small = _read_capture([(1, True), (30, True)],
                          [(1, True, chat({"content": "a"})), (1, False, usage(1)),
                           (1, False, b"[DONE]")], drift_ns=10_000)
    assert not decode_capture(0, 5, small, "chat").clock_stepped  # slew, not a step


def test_tokens_without_text_are_timed_by_their_events_when_the_server_counted_them() -> None:
    """Dummy weights served with a smaller tokenizer: every event has choices, none renders
    text, and usage counts the tokens. The request is measured, by its events (vLLM's TTFT),
    and says so; without the server's count it is still a named failure."""
    events = [(3, {"id": "x", "choices": [{"text": ""}]}),
              (7, {"id": "x", "choices": [{"text": ""}]}),
              (11, {"id": "x", "choices": [{"text": "", "finish_reason": "length"}]})]
    out = decode_capture(0, 5, capture([*events, (12, usage(3))]), "completions")
    assert out.success and out.text_free and out.text == ""
    assert out.ttft_text_ns == out.ttft_ns == 3 * MS and out.latency_ns == 11 * MS
    assert out.output_tokens == 3 and out.itl_ns == [4 * MS, 4 * MS]
    uncounted = decode_capture(0, 5, capture(events), "completions")
    assert not uncounted.success and uncounted.error == "stream carried no generated text"
    assert not decode_capture(0, 5, capture([(1, chat({"content": "a"})), (2, usage(1))]),
                              "chat").text_free
