"""SGLang's result line and console block field by field: every key where it belongs, the
request rate in its three spellings, and each error naming the key that is wrong.

test_sglang.py reads the sample files; these tests build small inputs whose every value is
distinct, so a key read into the wrong field, left out or named wrongly in an error shows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.importers import ImportedResult, parse_results


def _line(**changes: Any) -> dict[str, Any]:
    """An SGLang ``--output-file`` line with every mapped key, each value distinct."""
    row: dict[str, Any] = {
        "ttfts": [0.1], "backend": "sglang", "request_rate": 4.5, "max_concurrency": 8,
        "completed": 30, "total_input_tokens": 3000, "total_output_tokens": 900,
        "max_concurrent_requests": 9, "duration": 12.5, "request_throughput": 2.4,
        "output_throughput": 72.5, "max_output_tokens_per_s": 96.0,
        "total_throughput": 312.5, "mean_e2e_latency_ms": 410.5, "p90_e2e_latency_ms": 620.5,
        "mean_ttft_ms": 30.5, "std_tpot_ms": 1.5, "p95_itl_ms": 14.5,
        "mean_queue_ms": 2.5, "concurrency": 3.25,
        "server_info": {"version": "0.5.5", "tp_size": 1},
    }
    row.update(changes)
    return row


def _read(doc: Any) -> ImportedResult:
    [r] = parse_results(json.dumps(doc), "s.jsonl")
    return r


def _error(text: str) -> str:
    with pytest.raises(UsageError) as caught:
        parse_results(text, "s.jsonl")
    return str(caught.value)


def test_every_key_of_a_result_line_lands_in_its_field() -> None:
    """SGLang's keys to vLLM's (E2E latency to e2el, total_throughput to
    total_token_throughput); per-request lists dropped, wherever they stand; the rest in
    extra; the server's version is the source version."""
    r = _read(_line())
    got = {k: v for k, v in r.model_dump().items() if v is not None and k != "extra"}
    assert got == {
        "source_format": "sglang-jsonl", "source_version": "0.5.5", "source_file": "s.jsonl",
        "source_index": 0, "backend": "sglang", "request_rate": 4.5, "max_concurrency": 8,
        "completed": 30, "total_input_tokens": 3000, "total_output_tokens": 900,
        "max_concurrent_requests": 9, "duration": 12.5, "request_throughput": 2.4,
        "output_throughput": 72.5, "max_output_tokens_per_s": 96.0,
        "total_token_throughput": 312.5, "mean_e2el_ms": 410.5, "p90_e2el_ms": 620.5,
        "mean_ttft_ms": 30.5, "std_tpot_ms": 1.5, "p95_itl_ms": 14.5}
    assert r.extra == {"mean_queue_ms": 2.5, "concurrency": 3.25,
                       "server_info": {"version": "0.5.5", "tp_size": 1}}


@pytest.mark.parametrize(("rate", "field", "extra"), [
    ("inf", "inf", None), ("trace", None, "trace"), (None, None, None), (2, 2.0, None)])
def test_the_rate_of_a_result_line(rate: Any, field: Any, extra: Any) -> None:
    """``"inf"`` is unlimited, a word (``trace``) is no rate and stays in extra."""
    r = _read(_line(request_rate=rate))
    assert (r.request_rate, r.extra.get("request_rate")) == (field, extra)


def test_a_null_backend_is_no_backend() -> None:
    assert _read(_line(backend=None)).backend is None


@pytest.mark.parametrize(("changes", "message"), [
    ({"backend": 5}, "backend: 5 is not text"),
    ({"request_rate": True}, "request_rate: True is not a number"),
    ({"completed": 2.5}, "completed: 2.5 is not a whole number"),
    ({"duration": "long"}, "duration: 'long' is not a number"),
    ({"total_throughput": "x"}, "total_throughput: 'x' is not a number"),
    ({"p90_e2e_latency_ms": "x"}, "p90_e2e_latency_ms: 'x' is not a number"),
    ({"std_tpot_ms": "x"}, "std_tpot_ms: 'x' is not a number"),
])
def test_a_bad_value_is_named_by_its_line_and_key(changes: dict[str, Any],
                                                  message: str) -> None:
    """In a file of several lines the error names the line, then the key."""
    text = json.dumps(_line()) + "\n" + json.dumps(_line(**changes)) + "\n"
    assert _error(text) == f"s.jsonl: line 2: {message}"


def _block(rate: str) -> str:
    return "\n".join([
        "============ Serving Benchmark Result ============",
        "Backend: sglang", f"Traffic request rate: {rate}", "Successful requests: 10",
        "Benchmark duration (s): 4.50", "Concurrency: 1.25", "=" * 50, ""])


@pytest.mark.parametrize(("rate", "field", "extra"), [
    ("inf", "inf", {}), ("2.50", 2.5, {}), ("16", 16.0, {}),
    ("trace", None, {"request_rate": "trace"})])
def test_the_console_rate_is_inf_a_number_or_a_word_kept_in_extra(
        rate: str, field: Any, extra: dict[str, str]) -> None:
    [r] = parse_results(_block(rate), "log.txt")
    assert (r.source_format, r.backend, r.request_rate) == ("sglang-console", "sglang", field)
    assert r.extra == {"concurrency": 1.25, **extra}
