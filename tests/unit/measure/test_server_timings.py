"""A server's own per-request ``timings`` (llama.cpp) reach the outcome and the record line;
a stream without them leaves the record's bytes as they were."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchlib.measure import RequestRecord, decode_capture, read_requests
from benchlib.measure.results._records import RecordLog

from .test_decode import capture, chat

#: the last chunk of a llama-server chat stream with stream_options.include_usage and a
#: draft model (tools/server/server-task.cpp, to_json_oaicompat_chat_stream)
TIMINGS = {"cache_n": 0, "prompt_n": 12, "prompt_ms": 3.5, "prompt_per_token_ms": 0.29,
           "prompt_per_second": 3428.6, "predicted_n": 8, "predicted_ms": 20.25,
           "predicted_per_token_ms": 2.53, "predicted_per_second": 395.1, "draft_n": 12,
           "draft_n_accepted": 6}


def _usage_with_timings(timings: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c1", "choices": [], "object": "chat.completion.chunk",
            "usage": {"completion_tokens": 8, "prompt_tokens": 12, "total_tokens": 20},
            "timings": timings}


def test_last_timings_object_is_kept_and_written(tmp_path: Path) -> None:
    early = {**TIMINGS, "predicted_n": 1}  # timings_per_token: one on every event
    cap = capture([(1, chat({"role": "assistant", "content": None})),
                   (2, {**chat({"content": "a"}), "timings": early}),
                   (3, chat({"content": "b"})), (4, chat({}, "length")),
                   (5, _usage_with_timings({**TIMINGS, "note": "text", "flag": True,
                                            "nan": float("nan")}))])
    out = decode_capture(0, 12, cap, "chat")
    assert out.success and out.output_tokens == 8 and out.output_tokens_source == "usage"
    assert out.server_timings == {k: float(v) for k, v in TIMINGS.items()}
    record = RequestRecord.from_outcome(out, [4.0, 4.0], out.start_ns)
    line = record.to_json()
    assert list(line)[-1] == "server_timings"
    assert line["server_timings"]["draft_n_accepted"] == 6.0
    path = tmp_path / "r.requests.jsonl"
    log = RecordLog(path)
    log.write(record)
    log.close()
    assert json.loads(path.read_text())["server_timings"] == out.server_timings
    assert read_requests(path) == [record]


def test_no_timings_no_key() -> None:
    cap = capture([(1, chat({"content": "a"})), (2, chat({}, "stop"))])
    out = decode_capture(0, 3, cap, "chat")
    assert out.success and out.server_timings is None
    line = RequestRecord.from_outcome(out, [1.0], out.start_ns).to_json()
    assert "server_timings" not in line
    assert list(line)[-1] == "tool_call_text"
