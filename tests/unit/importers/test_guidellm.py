"""GuideLLM's benchmarks.json: one result per benchmark, successful distributions only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.importers import import_results, parse_results

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"


def _report() -> Any:
    return json.loads((DATA / "guidellm_benchmarks.json").read_text())


def test_each_benchmark_is_a_result() -> None:
    raw = _report()["benchmarks"]
    concurrent, constant = import_results(DATA / "guidellm_benchmarks.json")
    assert (concurrent.source_format, concurrent.source_version, concurrent.model_id) == (
        "guidellm-json", "0.4.0", "Qwen/Qwen3-8B")
    assert (concurrent.max_concurrency, concurrent.request_rate) == (4, None)  # 4 streams
    assert (constant.max_concurrency, constant.request_rate) == (None, 16.0)
    assert (concurrent.completed, concurrent.failed) == (236, 1)
    assert concurrent.extra["incomplete_requests"] == 2
    assert concurrent.duration == raw[0]["duration"]
    metrics = raw[0]["metrics"]
    ttft = metrics["time_to_first_token_ms"]["successful"]
    assert (concurrent.mean_ttft_ms, concurrent.median_ttft_ms, concurrent.std_ttft_ms) == (
        ttft["mean"], ttft["median"], ttft["std_dev"])
    assert concurrent.percentile("ttft", 99) == ttft["percentiles"]["p99"]
    assert concurrent.percentile("ttft", "0.1") == ttft["percentiles"]["p001"]
    assert concurrent.percentile("ttft", "99.9") == ttft["percentiles"]["p999"]
    assert concurrent.request_throughput == metrics["requests_per_second"]["successful"]["mean"]
    assert concurrent.output_throughput == 1006.8607
    assert concurrent.total_token_throughput == 3020.5821
    assert (concurrent.total_input_tokens, concurrent.total_output_tokens) == (120832, 60416)


def test_request_latency_seconds_become_milliseconds_exactly() -> None:
    concurrent, constant = import_results(DATA / "guidellm_benchmarks.json")
    # 1.0126780271530151 s, 1.0098240375518799 s, p99 1.0582149028778076 s, std 0.011 s
    assert concurrent.mean_e2el_ms == 1012.6780271530151
    assert concurrent.median_e2el_ms == 1009.8240375518799
    assert concurrent.percentile("e2el", 99) == 1058.2149028778076
    assert concurrent.std_e2el_ms == 11.0
    assert constant.mean_e2el_ms == 1300.9  # 1.3009 s, not 1300.8999999999999


def test_token_weighted_itl_and_tpot_stay_guidellms() -> None:
    [concurrent, _] = import_results(DATA / "guidellm_benchmarks.json")
    assert concurrent.mean_tpot_ms is None and concurrent.mean_itl_ms is None
    assert concurrent.extra["inter_token_latency_ms"]["mean"] == 3.7798612
    assert concurrent.extra["time_per_output_token_ms"]["count"] == 60416
    assert concurrent.extra["strategy"] == {"type_": "concurrent", "streams": 4}
    # not carried: goodput, date, burstiness, peaks
    assert concurrent.request_goodput is None and concurrent.date is None
    assert concurrent.burstiness is None and concurrent.max_output_tokens_per_s is None


def test_the_older_report_layout() -> None:
    report = _report()
    del report["metadata"], report["args"]
    bench = report["benchmarks"][0]
    bench["args"] = {"strategy": bench.pop("config")["strategy"]}
    bench["request_totals"] = bench["metrics"].pop("request_totals")
    bench["worker"] = {"type_": "generative_requests_worker", "backend_model": "llama-3-8b"}
    report["benchmarks"] = [bench]
    [r] = parse_results(json.dumps(report), "old.json")
    assert (r.source_version, r.model_id, r.max_concurrency, r.completed) == (
        None, "llama-3-8b", 4, 236)


def test_a_benchmark_without_request_totals_is_malformed() -> None:
    report = _report()
    del report["benchmarks"][1]["metrics"]["request_totals"]
    with pytest.raises(UsageError, match=r"g\.json: benchmarks\[1\]: no request_totals"):
        parse_results(json.dumps(report), "g.json")
