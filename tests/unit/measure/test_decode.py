"""benchlib/measure/wire/_decode.py: a captured stream read into a request's outcome (TTFT,
ITL, E2EL, tokens, both views of the events), every fault named in the words a user reads (the
event's number, its first bytes, the server's own message), and the tokens each text chunk
held, from the server's count, never from chunks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchlib.measure import RequestOutcome, StreamCapture, decode_capture
from benchlib.measure.wire._decode import chunk_token_counts

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
    cap.end_ns = cap.read_times[-1] if cap.read_times else cap.start_ns
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


def _stream(payloads: list[bytes], **facts: Any) -> StreamCapture:
    """Event k alone in read k, stamped by the kernel at k + 1 ms after the send, read by
    Python 1 ms later; ``facts``: the capture's other fields (status, content type …)."""
    cap = _read_capture([(k + 1, True) for k in range(len(payloads))],
                        [(k, True, p) for k, p in enumerate(payloads)], user_lag_ms=1)
    cap.saw_done = b"[DONE]" in payloads
    for name, value in facts.items():
        setattr(cap, name, value)
    return cap


def _decode(payloads: list[bytes], **facts: Any) -> RequestOutcome:
    return decode_capture(3, 12, _stream(payloads, **facts), "chat")


def _json(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode()


T0 = 1_000 * MS  # _read_capture's send


def test_a_whole_stream_keeps_the_captures_facts_and_both_views() -> None:
    o = _decode([_json(chat({"role": "assistant"})), _json(chat({"content": "Hel"})),
                 _json(chat({"content": "lo"}, "length")), _json(usage(2)), b"[DONE]"],
                synthetic=True)
    assert o.success and o.error == "" and o.response_id == "c1"
    assert (o.index, o.prompt_len, o.start_ns, o.http_status) == (3, 12, T0, 200)
    assert o.kernel_clock and o.synthetic and o.clock == "kernel" and not o.clock_stepped
    assert (o.reads, o.stamped_reads, o.read_lags_ns) == (5, 5, [MS] * 5)
    assert (o.output_tokens, o.output_tokens_source, o.server_prompt_tokens) == (2, "usage", 7)
    assert o.finish_reason == "length" and o.text == "Hello" and o.chunk_texts == ["Hel", "lo"]
    # vLLM's view: from the role chunk; benchlib's: from the first text
    assert (o.ttft_ns, o.itl_ns, o.latency_ns) == (MS, [MS, MS], 3 * MS)
    assert (o.ttft_text_ns, o.ttft_text_lower_ns, o.ttft_text_exact) == (2 * MS, 2 * MS, True)
    assert o.chunk_times_ns == [T0 + 2 * MS, T0 + 3 * MS] and o.chunk_reads == [1, 2]
    assert o.text_gaps_ns == [MS] and o.text_gap_measured == [True]
    assert o.end_ns == T0 + 3 * MS  # the last choices event, not the capture's end
    assert o.latency_lower_ns == 3 * MS


def test_an_early_fault_keeps_the_captures_facts() -> None:
    cap = _stream([], status=503, synthetic=True, end_ns=T0 + 7 * MS)
    o = decode_capture(0, 1, cap, "chat")
    assert not o.success and o.error.startswith("HTTP 503: ")
    assert (o.start_ns, o.end_ns, o.http_status, o.synthetic) == (T0, T0 + 7 * MS, 503, True)


@pytest.mark.parametrize(("body", "said"), [
    (b"x" * 300, "x" * 200),                                       # a page: its first 200
    (b'{"message": "model not found"}', "model not found"),        # no "error": the body
    (b'{"detail": "Not Found"}', "Not Found"),                     # FastAPI's
    (b'{"error": {"detail": "bad key"}}', "bad key"),
    (b'{"error": {"message": "' + b"m" * 600 + b'"}}', "m" * 500),
    (b'{"error": "' + b"e" * 600 + b'"}', "e" * 500),              # an error as a string
    (b'{"error": {"code": 7}}', "{'code': 7}"),                    # neither: the whole
    (b'"' + b"s" * 600 + b'"', "s" * 500),                         # JSON, not an object
])
def test_an_http_error_says_the_servers_own_words(body: bytes, said: str) -> None:
    cap = _stream([], status=400, content_type="application/json", body=bytearray(body))
    assert decode_capture(0, 1, cap, "chat").error == f"HTTP 400: {said}"


@pytest.mark.parametrize(("content_type", "shown"), [("application/json", "'application/json'"),
                                                      ("", "'missing'")])
def test_a_json_answer_to_a_stream_is_named(content_type: str, shown: str) -> None:
    assert _decode([], content_type=content_type).error == (
        f"server answered with a JSON body, not an event stream (content-type {shown})")


def test_a_transport_fault_before_any_event_is_the_error() -> None:
    """Even where the headers said JSON: what failed is the connection."""
    o = _decode([], content_type="application/json", error="connection reset mid-response")
    assert o.error == "connection reset mid-response"


def test_faults_inside_the_stream_name_the_event_and_its_first_bytes() -> None:
    a = _json(chat({"content": "a"}))
    long = b"{" + b"x" * 100
    assert _decode([a, long]).error == f"SSE event #2 is not valid JSON: {long[:80]!r}"
    array = b"[" + b"1," * 60 + b"1]"
    assert _decode([a, a, array]).error == (
        f"SSE event #3 is not a JSON object: {array[:80]!r}")
    shape = b'{"choices": "' + b"c" * 100 + b'"}'
    assert _decode([shape]).error == (
        "SSE event #1 has an unexpected shape (AttributeError: 'str' object has no attribute "
        f"'get'): {shape[:80]!r}")
    said = _decode([a, b'{"object": "error", "message": "out of blocks"}'])
    assert said.error == "server error in stream: out of blocks"
    assert _decode([a]).error == "stream ended without [DONE]"


def test_events_after_done_are_still_read() -> None:
    """A server that sends its usage after [DONE] has still counted the tokens."""
    o = _decode([_json(chat({"content": "a"})), b"[DONE]", _json(usage(1))])
    assert o.success and o.output_tokens_source == "usage" and o.output_tokens == 1


def test_tool_calls_concatenate_with_missing_parts_left_out() -> None:
    calls = [{"index": 0, "function": {"name": "get_weather", "arguments": None}},
             {"index": 1, "function": {"arguments": '{"city": "Seoul"}'}}]
    o = _decode([_json(chat({"tool_calls": calls})), b"[DONE]"])
    assert o.tool_text == 'get_weather{"city": "Seoul"}' and o.chunk_texts == [o.tool_text]


@pytest.mark.parametrize(("tokens", "ok"), [(1, True), (0, False), (None, False)])
def test_a_stream_without_text_succeeds_only_on_the_servers_count(tokens: int | None,
                                                                  ok: bool) -> None:
    """Dummy weights can generate ids a smaller tokenizer renders as nothing: one token the
    server counted is a text-free success, timed by the choices events."""
    counted = _json(usage(tokens)) if tokens is not None else _json({"id": "c1", "choices": []})
    o = _decode([_json(chat({"role": "assistant"})), _json(chat({"content": ""})), counted,
                 b"[DONE]"])
    assert o.success is ok
    if ok:
        assert o.text_free and o.ttft_text_ns == o.ttft_ns == MS
        assert o.ttft_text_lower_ns == MS and o.ttft_text_exact is True
        assert o.end_ns == T0 + 2 * MS
    else:
        assert o.error == "stream carried no generated text"


def _chunks(texts: list[str], tokens: int) -> RequestOutcome:
    o = RequestOutcome(index=0, prompt_len=1, start_ns=0, success=True)
    o.chunk_texts, o.output_tokens = texts, tokens
    return o


def test_tokens_go_to_the_chunk_their_first_character_came_in(tokenizer: Any) -> None:
    texts = ["Hello", " world", " and more"]
    enc = tokenizer("".join(texts), add_special_tokens=False, return_offsets_mapping=True)
    # the premise: the tiny model's tokenizer splits the text at these characters
    assert [s for s, _ in enc["offset_mapping"]] == [0, 1, 3, 5, 9, 11, 15]
    assert chunk_token_counts(_chunks(texts, 0), tokenizer) == [3, 2, 2]  # no server count
    assert chunk_token_counts(_chunks(texts, 14), tokenizer) == [6, 4, 4]  # scaled to it
    assert chunk_token_counts(_chunks(texts[:1], 3), tokenizer) == [3]


class _NoOffsets:
    """A tokenizer that cannot give offsets (a slow one), or gives none."""

    def __init__(self, raises: bool) -> None:
        self.raises = raises

    def __call__(self, text: str, **kw: Any) -> dict[str, Any]:
        if self.raises:
            raise NotImplementedError("return_offsets_mapping is not available")
        return {"offset_mapping": []}


@pytest.mark.parametrize("tok", [None, _NoOffsets(True), _NoOffsets(False)])
def test_without_offsets_the_servers_count_is_spread_evenly(tok: Any) -> None:
    assert chunk_token_counts(_chunks(["a", "b", "c", "d"], 6), tok) == [1.5] * 4
    assert chunk_token_counts(_chunks(["a", "b"], 0), tok) == [0.0, 0.0]  # never the chunks
    assert chunk_token_counts(_chunks([], 5), tok) == []
