"""AIPerf's export field by field: each value where it belongs, each error naming its path.

test_aiperf.py reads the sample exports; these tests build small exports whose every value
is distinct, so a value read from the wrong block, with the wrong unit or into the wrong key
shows, and so does an error message that names the wrong place in the file.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.importers import ImportedResult, parse_results


def _export(**changes: Any) -> dict[str, Any]:
    """A flat (newer) export with every mapped block, each value distinct."""
    doc: dict[str, Any] = {
        "schema_version": "1.3", "aiperf_version": "0.6.1", "benchmark_id": "bm-1",
        "time_to_first_token": {"unit": "s", "avg": 0.25, "p50": 0.2, "p99": 0.75,
                                "std": 0.125, "count": 4},
        "request_latency": {"unit": "us", "avg": 3500, "p1": 1500, "p90": 4500},
        "inter_token_latency": {"unit": "ns", "avg": 21000000, "p50": 20000000},
        "request_throughput": {"unit": "requests/s", "avg": 1.5},
        "output_token_throughput": {"unit": "tokens/s", "avg": 90.5},
        "total_token_throughput": {"unit": "tokens/sec", "avg": 190.5},
        "goodput": {"unit": "requests/sec", "avg": 1.25},
        "benchmark_duration": {"unit": "s", "avg": 8.5},
        "request_count": {"unit": "requests", "avg": 12.0},
        "error_request_count": {"unit": "requests", "avg": 2},
        "total_isl": {"unit": "tokens", "avg": 1200},
        "total_osl": {"unit": "tokens", "avg": 340.0},
        "input_config": {"loadgen": {"concurrency": 7, "request_rate": 2},
                         "endpoint": {"model_names": ["org/model", "other"]}},
    }
    doc.update(changes)
    return doc


def _read(doc: Any, source: str = "a.json") -> ImportedResult:
    [r] = parse_results(json.dumps(doc), source)
    return r


def _error(doc: Any, source: str = "a.json") -> str:
    with pytest.raises(UsageError) as caught:
        parse_results(doc if isinstance(doc, str) else json.dumps(doc), source)
    return str(caught.value)


def test_every_mapped_block_lands_in_its_key_in_vllm_units() -> None:
    """Each tag goes to its vLLM key, converted from its unit (s, us, ns to ms) exactly."""
    r = _read(_export())
    got = {k: v for k, v in r.model_dump().items() if v is not None and k != "extra"}
    assert got == {
        "source_format": "aiperf-json", "source_version": "0.6.1", "source_file": "a.json",
        "source_index": 0, "model_id": "org/model", "request_rate": 2.0,
        "max_concurrency": 7, "duration": 8.5, "completed": 12, "failed": 2,
        "total_input_tokens": 1200, "total_output_tokens": 340, "request_throughput": 1.5,
        "request_goodput": 1.25, "output_throughput": 90.5, "total_token_throughput": 190.5,
        "mean_ttft_ms": 250.0, "median_ttft_ms": 200.0, "p50_ttft_ms": 200.0,
        "p99_ttft_ms": 750.0, "mean_e2el_ms": 3.5, "p1_e2el_ms": 1.5, "p90_e2el_ms": 4.5,
        "mean_tpot_ms": 21.0, "median_tpot_ms": 20.0, "p50_tpot_ms": 20.0}
    assert isinstance(r.request_rate, float) and isinstance(r.total_output_tokens, int)


def test_extra_keeps_what_vllm_has_no_key_for_and_nothing_it_has() -> None:
    """A latency block's leftovers (std, count) stay under its tag; a block read whole
    (only unit and mapped statistics) leaves nothing; the run's own keys and any newer
    top-level key are kept, AIPerf's bookkeeping (run_info, input_config …) is not."""
    doc = _export(was_cancelled=False, start_time="t0", end_time="t1",
                  error_summary=[{"count": 1}], run_info={"trial": 0},
                  telemetry_data={"gpu": 1}, new_number=5, new_object={"a": 1},
                  time_to_second_token={"unit": "ms", "avg": 9.5})
    assert _read(doc).extra == {
        "time_to_first_token": {"unit": "s", "std": 0.125, "count": 4},
        "time_to_second_token": {"unit": "ms", "avg": 9.5},
        "schema_version": "1.3", "benchmark_id": "bm-1", "was_cancelled": False,
        "start_time": "t0", "end_time": "t1", "error_summary": [{"count": 1}],
        "new_number": 5, "new_object": {"a": 1}}


def test_the_first_releases_blocks_lose_their_tag_and_header_only() -> None:
    """Under ``records`` every block repeats its tag and a header: those are not data."""
    doc = {"records": {
        "ttft": {"tag": "ttft", "header": "Time to First Token", "unit": "ms", "avg": 18.5,
                 "p50": 15.5, "max": 106.25},
        "request_latency": {"tag": "request_latency", "header": "Request Latency",
                            "unit": "ms", "avg": 487.25},
        "request_count": {"tag": "request_count", "header": "Request Count",
                          "unit": "requests", "avg": 100}}}
    r = _read(doc)
    assert (r.source_version, r.mean_ttft_ms, r.median_ttft_ms, r.mean_e2el_ms,
            r.completed) == (None, 18.5, 15.5, 487.25, 100)
    assert r.extra == {"ttft": {"unit": "ms", "max": 106.25}}


def test_a_latency_block_without_avg_has_no_mean() -> None:
    """avg may be missing (a metric with percentiles only): the mean is then None."""
    r = _read(_export(time_to_first_token={"unit": "ms", "p50": 3.5}))
    assert (r.mean_ttft_ms, r.median_ttft_ms) == (None, 3.5)


def test_a_file_with_only_aiperf_version_is_aiperf_s() -> None:
    """aiperf_version alone names the tool, even before any known metric block."""
    r = _read({"aiperf_version": "0.7.0", "tokens_per_user": {"unit": "tokens", "avg": 3}})
    assert (r.source_format, r.source_version, r.extra) == (
        "aiperf-json", "0.7.0", {"tokens_per_user": {"unit": "tokens", "avg": 3}})


def test_a_version_that_is_not_text_is_not_a_version() -> None:
    assert _read(_export(aiperf_version=6)).source_version is None


@pytest.mark.parametrize("names", [[], [42], "org/model", None])
def test_model_names_without_a_first_name_give_no_model(names: Any) -> None:
    """Only a list whose first item is text names the model."""
    doc = _export(input_config={"endpoint": {"model_names": names}})
    r = _read(doc)
    assert (r.model_id, r.max_concurrency, r.request_rate) == (None, None, None)


def test_a_whole_float_concurrency_is_a_concurrency() -> None:
    r = _read(_export(input_config={"loadgen": {"concurrency": 64.0, "request_rate": 0.5}}))
    assert (r.max_concurrency, r.request_rate) == (64, 0.5)


_REQ_TP = "request_throughput"


@pytest.mark.parametrize(("changes", "message"), [
    ({"time_to_first_token": {"unit": "ms", "avg": "x"}},
     "time_to_first_token.avg: 'x' is not a number"),
    ({"time_to_first_token": {"unit": "ms", "avg": 1, "p50": "x"}},
     "time_to_first_token.p50: 'x' is not a number"),
    ({"request_latency": {"unit": "ms", "avg": 1, "p99": "slow"}},
     "request_latency.p99: 'slow' is not a number"),
    ({"request_latency": {"unit": "tokens", "avg": 1}},
     "request_latency.unit: 'tokens' is not a time unit (ms, s, sec, us, ns)"),
    ({_REQ_TP: {"unit": "tokens/sec", "avg": 1}},
     "request_throughput.unit: 'tokens/sec', expected one of requests/sec, requests/s"),
    ({_REQ_TP: {"unit": "requests/sec", "avg": "fast"}},
     "request_throughput.avg: 'fast' is not a number"),
    ({"request_count": {"unit": "requests", "avg": 2.5}},
     "request_count.avg: 2.5 is not a whole number"),
    ({"input_config": {"loadgen": {"concurrency": True}}},
     "input_config.loadgen.concurrency: True is not a number"),
    ({"input_config": {"loadgen": {"concurrency": 2.5}}},
     "input_config.loadgen.concurrency: 2.5 is not a whole number"),
    ({"input_config": {"loadgen": {"request_rate": False}}},
     "input_config.loadgen.request_rate: False is not a number"),
    ({"input_config": {"loadgen": {"request_rate": "10"}}},
     "input_config.loadgen.request_rate: '10' is not a number"),
])
def test_a_bad_value_is_malformed_and_named_by_its_path(changes: dict[str, Any],
                                                        message: str) -> None:
    """The message is the file, the value's key path and what is wrong with it (a bool is
    not a number, though Python's bool is an int)."""
    assert _error(_export(**changes)) == f"a.json: {message}"


@pytest.mark.parametrize(("records", "message"), [
    ({"ttft": {"unit": "tokens", "avg": 1}},
     "records.ttft.unit: 'tokens' is not a time unit (ms, s, sec, us, ns)"),
    ({"ttft": 5}, "records.ttft: expected a metric block (unit, avg, …)"),
    ({"request_count": {"unit": "requests", "avg": 1.5}},
     "records.request_count.avg: 1.5 is not a whole number"),
])
def test_a_bad_block_of_the_first_releases_is_named_under_records(records: dict[str, Any],
                                                                  message: str) -> None:
    assert _error({"records": records}) == f"a.json: {message}"


def test_an_error_in_json_lines_names_the_line() -> None:
    """In a JSON Lines file the path starts with the line of the document."""
    good = json.dumps(_export())
    bad = json.dumps(_export(input_config={"loadgen": {"concurrency": True}}))
    assert _error(f"{good}\n{bad}\n", "r.jsonl") == (
        "r.jsonl: line 2: input_config.loadgen.concurrency: True is not a number")
