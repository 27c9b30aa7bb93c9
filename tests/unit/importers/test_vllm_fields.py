"""vLLM's console lines and result JSON field by field: the traffic lines printed before the
block, the speculative-decoding positions, the unlimited rate, benchlib's own JSON, and each
error naming the line or key that is wrong.

test_vllm.py reads the sample files; these tests build small inputs, so a message that loses
its line number or names the wrong key shows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.importers import ImportedResult, parse_results


def _error(text: str, source: str = "run.log") -> str:
    with pytest.raises(UsageError) as caught:
        parse_results(text, source)
    return str(caught.value)


def _block(*lines: str) -> list[str]:
    return ["============ Serving Benchmark Result ============", "Successful requests: 3",
            "Benchmark duration (s): 1.50", *lines, "=" * 50]


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_the_traffic_lines_before_each_block_are_its_settings() -> None:
    """Each block takes the rate, burstiness and concurrency printed since the previous one."""
    text = _log("Traffic request rate: 2.125", "Burstiness factor: 0.5 (Gamma distribution)",
                "Maximum request concurrency: 4", *_block(),
                "Traffic request rate: inf", "Burstiness factor: inf", *_block())
    first, second = parse_results(text, "run.log")
    assert (first.request_rate, first.burstiness, first.max_concurrency) == (2.125, 0.5, 4)
    assert (second.request_rate, second.burstiness, second.max_concurrency) == (
        "inf", "inf", None)


@pytest.mark.parametrize(("before", "message"), [
    (["Starting main benchmark run...", "Traffic request rate: fast"],
     "line 2: Traffic request rate: 'fast' is not a number"),
    (["Burstiness factor: x (Poisson process)"],
     "line 1: Burstiness factor: 'x' is not a number"),
    (["", "", "Maximum request concurrency: 2.5"],
     "line 3: Maximum request concurrency: '2.5' is not a whole number"),
])
def test_a_bad_traffic_line_before_the_block_is_named_by_its_line(before: list[str],
                                                                  message: str) -> None:
    assert _error(_log(*before, *_block())) == f"run.log: {message}"


def test_a_bad_traffic_line_before_a_later_block_counts_the_lines_above_it() -> None:
    """The second block's preamble starts after the first block's closing line (line 4)."""
    text = _log(*_block(), "log line", "Traffic request rate: x", *_block())
    assert _error(text) == "run.log: line 6: Traffic request rate: 'x' is not a number"


def test_the_per_position_acceptance_is_read_from_its_section_only() -> None:
    """``Position N:`` lines are the speculative-decoding acceptance only in that section;
    a bad one is named by its line and position."""
    spec = ["------------Speculative Decoding------------", "Position 0: 90.50",
            "Position 1: 49.25"]
    [r] = parse_results(_log(*_block(*spec)), "run.log")
    assert r.extra == {"spec_decode_per_position_acceptance_pct": [90.5, 49.25]}
    [other] = parse_results(_log(*_block("------Other------", "Position 0: 1.00")), "run.log")
    assert other.extra == {"unrecognized_lines": ["Position 0: 1.00"]}
    bad = _log(*_block(spec[0], "Position 0: 90.50", "Position 1: most"))
    assert _error(bad) == "run.log: line 6: Position 1: 'most' is not a number"


def _json(**changes: Any) -> ImportedResult:
    [r] = parse_results(json.dumps({"completed": 3, "duration": 1.5, **changes}), "r.json")
    return r


@pytest.mark.parametrize(("rate", "expected"), [
    (None, None), ("inf", "inf"), (float("inf"), "inf"), (2, 2.0), (0.25, 0.25)])
def test_an_unlimited_rate_is_inf_and_a_number_stays_a_number(rate: Any,
                                                              expected: Any) -> None:
    r = _json(request_rate=rate, burstiness=rate)
    assert (r.request_rate, r.burstiness) == (expected, expected)


def test_completed_or_duration_alone_is_no_vllm_result() -> None:
    """vLLM's result has both; either alone is some other JSON."""
    for only in ({"completed": 3}, {"duration": 1.5}):
        assert "a JSON object of no known format" in _error(json.dumps(only), "r.json")


@pytest.mark.parametrize(("backend", "own", "fmt"), [
    ("benchlib", {"recipe": "r"}, "benchlib-json"), ("benchlib", None, "vllm-json"),
    ("vllm", {"recipe": "r"}, "vllm-json")])
def test_benchlib_s_json_is_told_by_its_backend_and_its_own_section(
        backend: str, own: Any, fmt: str) -> None:
    assert _json(backend=backend, benchlib=own).source_format == fmt


@pytest.mark.parametrize(("changes", "message"), [
    ({"model_id": 5}, "model_id: 5 is not text"),
    ({"duration": "long"}, "duration: 'long' is not a number"),
    ({"burstiness": "x"}, "burstiness: 'x' is not a number"),
    ({"request_rate": True}, "request_rate: True is not a number"),
    ({"p99_ttft_ms": "slow"}, "p99_ttft_ms: 'slow' is not a number"),
    ({"request_goodput:": "x"}, "request_goodput:: 'x' is not a number"),
])
def test_a_bad_value_in_the_json_is_named_by_its_line_and_key(changes: dict[str, Any],
                                                              message: str) -> None:
    good = {"completed": 3, "duration": 1.5}
    text = json.dumps(good) + "\n" + json.dumps({**good, **changes}) + "\n"
    assert _error(text, "r.jsonl") == f"r.jsonl: line 2: {message}"
