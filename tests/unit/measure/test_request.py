"""Interpreting captured streams: TTFT, ITL, E2EL, tokens and named faults."""

from __future__ import annotations

import json
from typing import Any

from benchlib.measure import StreamCapture, build_body, decode_capture
from benchlib.measure._request import Prompt, chunk_token_counts

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


def test_role_chunk_does_not_start_ttft() -> None:
    cap = capture([(1, chat({"role": "assistant", "content": ""})), (20, chat({"content": "a"})),
                   (25, chat({"content": "b"})), (30, chat({"content": "c"}, "stop")),
                   (31, usage(6))])
    out = decode_capture(0, 5, cap, "chat")
    assert out.success and out.ttft_ns == 20 * MS
    assert out.itl_ns == [5 * MS, 5 * MS]
    assert out.latency_ns == 30 * MS
    assert out.output_tokens == 6 and out.output_tokens_source == "usage"
    assert out.server_prompt_tokens == 7 and out.finish_reason == "stop"


def test_reasoning_and_tool_calls_count_as_generated() -> None:
    cap = capture([(3, chat({"reasoning_content": "hmm"})), (4, chat({"reasoning": "ok"})),
                   (9, chat({"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]})),
                   (10, usage(3))])
    out = decode_capture(0, 5, cap, "chat")
    assert out.ttft_ns == 3 * MS
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
