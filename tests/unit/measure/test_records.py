"""What a run leaves behind: the per-request JSONL (kill-safe), the report's failure causes,
and the open-file limit it raises for itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.measure import RequestRecord, format_result, read_requests
from benchlib.measure.results._records import RecordLog

from ._outcomes import outcome


def _record(index: int, **changes: object) -> RequestRecord:
    record = RequestRecord.from_outcome(outcome(index, 0, 5, [1, 1], 3), [1.0] * 3, 0)
    return record.model_copy(update=changes)


def _line(index: int, **changes: object) -> bytes:
    return json.dumps(_record(index, **changes).to_json()).encode() + b"\n"


def test_line_log_truncates_and_writes_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.requests.jsonl"
    path.write_text('{"stale": true}\n')
    log = RecordLog(path)
    log.write(_record(0, generated_text="x" * 100_000))
    log.write(_record(1))
    log.close()
    assert [r.index for r in read_requests(path)] == [0, 1]


def test_line_log_never_writes_the_api_key(tmp_path: Path) -> None:
    path = tmp_path / "r.requests.jsonl"
    log = RecordLog(path, ["sk-echoed-by-server-123"])
    log.write(_record(0, success=False, error="HTTP 401: bad key sk-echoed-by-server-123"))
    log.close()
    assert b"sk-echoed" not in path.read_bytes()
    assert read_requests(path)[0].error == "HTTP 401: bad key ***"


def test_read_requests_drops_only_a_cut_off_last_line(tmp_path: Path) -> None:
    path = tmp_path / "r.requests.jsonl"
    path.write_bytes(_line(0) + _line(1) + _line(2)[:40])
    assert [r.index for r in read_requests(path)] == [0, 1]
    path.write_bytes(_line(0) + _line(1)[:40] + b"\n" + _line(2))
    with pytest.raises(ValueError, match=":2: not a JSON line"):
        read_requests(path)
    path.write_bytes(_line(0) + b'{"index": 1}\n')  # JSON, but not a record
    with pytest.raises(ValueError, match=":2: not a request record"):
        read_requests(path)


def _result(errors: list[str], tokenizer: int = 0) -> dict[str, object]:
    keys = ("ttft", "tpot", "itl", "itl_per_token", "e2el")
    result: dict[str, object] = {
        "completed": errors.count(""), "failed": len(errors) - errors.count(""),
        "duration": 1.0, "total_input_tokens": 0, "total_output_tokens": 0,
        "request_throughput": 0.0, "output_throughput": 0.0, "max_output_tokens_per_s": 0.0,
        "max_concurrent_requests": 1, "total_token_throughput": 0.0,
        "mean_tokens_per_chunk": 0.0, "errors": errors,
        "output_tokens_source": {"usage": errors.count("") - tokenizer, "tokenizer": tokenizer},
    }
    for k in keys:
        for stat in ("mean", "median", "p99"):
            result[f"{stat}_{k}_ms"] = 0.0
    return result


def test_report_lists_failures_by_cause() -> None:
    errors = ["", "HTTP 500: boom", "HTTP 500: boom", "request timed out after 1 s",
              *[f"cause {i}" for i in range(6)]]
    text = format_result(_result(errors), [99])
    assert "     2 × HTTP 500: boom" in text and "     1 × request timed out after 1 s" in text
    assert "     3 × other causes" in text  # 8 causes: the 5 most frequent, then the rest
    assert "Failed requests by cause" not in format_result(_result(["", ""]), [99])


def test_report_says_when_tokens_were_counted_by_the_tokenizer() -> None:
    text = format_result(_result(["", ""], tokenizer=2), [99])
    assert "Output tokens by tokenizer (no usage):" in text and "2 of 2 requests" in text


def test_open_file_limit_is_raised_never_lowered() -> None:
    code = (
        "import json, resource\n"
        "from benchlib.measure import raise_open_file_limit as r\n"
        "_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "a = r(1000); b = r(10)\n"
        "print(json.dumps([a, b, resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    a, b, soft, hard = json.loads(out.stdout)
    want = min(1064, hard) if hard >= 0 else 1064
    assert a == b == soft == want
