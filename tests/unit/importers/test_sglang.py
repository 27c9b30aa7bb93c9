"""``sglang.bench_serving`` console blocks (padded and as copied into a blog) and JSONL."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.importers import import_results, parse_results

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"


def test_padded_block_with_accept_length_and_no_concurrency_limit() -> None:
    [r] = import_results(DATA / "sglang_console_2025.txt")
    assert (r.source_format, r.backend, r.request_rate, r.max_concurrency) == (
        "sglang-console", "sglang", 16.0, None)  # "not set"
    assert (r.completed, r.duration, r.total_input_tokens, r.total_output_tokens) == (
        200, 14.7, 102811, 25644)
    assert (r.request_throughput, r.output_throughput, r.total_token_throughput) == (
        13.61, 1744.92, 8740.59)
    assert (r.mean_e2el_ms, r.median_e2el_ms) == (1412.91, 1350.07)
    assert (r.mean_ttft_ms, r.median_ttft_ms, r.percentile("ttft", 99)) == (41.2, 37.99, 98.44)
    assert r.percentiles("itl") == {"p95": 17.0, "p99": 31.56}
    # SGLang's own, under its names; not vLLM's keys
    assert r.extra == {"total_output_tokens_retokenized": 25611, "input_throughput": 6995.66,
                       "concurrency": 19.23, "accept_length": 3.19, "max_itl_ms": 402.12}
    # what this layout does not print
    assert r.failed is None and r.mean_tpot_ms is None and r.max_concurrent_requests is None
    assert r.percentile("e2el", 99) is None and r.source_version is None


def test_the_blog_copy_with_collapsed_padding() -> None:
    first, second = import_results(DATA / "sglang_console_blog_seed001.txt")
    assert (first.max_concurrency, second.max_concurrency) == (1, 16)
    assert first.request_rate == "inf"
    assert (second.completed, second.duration, second.mean_tpot_ms,
            second.percentile("tpot", 99)) == (80, 52.73, 18.03, 26.51)
    assert (second.max_output_tokens_per_s, second.max_concurrent_requests) == (1040.0, 21)
    assert (second.percentile("e2el", 90), second.percentile("e2el", 99)) == (15147.02,
                                                                              18237.06)
    assert second.extra["total_input_text_tokens"] == 39668
    assert second.extra["concurrency"] == 13.98


def test_jsonl_keys_mapped_to_vllms() -> None:
    rows = [json.loads(line) for line in (DATA / "sglang_output.jsonl").read_text().splitlines()]
    first, second, old = import_results(DATA / "sglang_output.jsonl")
    assert {r.source_format for r in (first, second, old)} == {"sglang-jsonl"}
    assert first.request_rate == "inf" and second.request_rate == 8.0  # Infinity in the file
    assert first.max_concurrency == 16 and second.max_concurrency is None
    assert first.total_token_throughput == rows[0]["total_throughput"]
    assert first.mean_e2el_ms == rows[0]["mean_e2e_latency_ms"]
    assert first.percentile("e2el", 90) == rows[0]["p90_e2e_latency_ms"]
    assert first.std_ttft_ms == rows[0]["std_ttft_ms"]
    assert first.percentile("itl", 95) == rows[0]["p95_itl_ms"]
    assert first.max_concurrent_requests == 21
    assert first.source_version == "0.5.4.post1"  # server_info.version
    assert first.extra["server_info"]["model_path"] == "zai-org/GLM-4.7-Flash"
    assert first.extra["concurrency"] == rows[0]["concurrency"]
    assert first.failed is None and first.burstiness is None
    # the mid-2025 line: no total_throughput, no p90, an accept length, no server_info
    assert old.total_token_throughput is None and old.percentile("e2el", 90) is None
    assert old.extra["accept_length"] == 2.87 and old.source_version is None


def test_a_trace_rate_is_no_rate() -> None:
    row = {"backend": "sglang", "request_rate": "trace", "completed": 3, "duration": 1.5,
           "mean_e2e_latency_ms": 10.0}
    [r] = parse_results(json.dumps(row), "trace.jsonl")
    assert r.request_rate is None and r.extra["request_rate"] == "trace"
