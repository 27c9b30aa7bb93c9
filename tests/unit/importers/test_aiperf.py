"""AIPerf's profile_export_aiperf.json: the flat layout and the first releases' ``records``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.importers import import_results, parse_results

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"


def _export() -> Any:
    return json.loads((DATA / "aiperf_profile_export.json").read_text())


def test_flat_export() -> None:
    raw = _export()
    [r] = import_results(DATA / "aiperf_profile_export.json")
    assert (r.source_format, r.source_version, r.model_id, r.max_concurrency) == (
        "aiperf-json", "0.5.0", "openai/gpt-oss-20b", 100)
    assert (r.completed, r.failed, r.total_input_tokens, r.total_output_tokens) == (
        200, 3, 110000, 19370)
    assert r.duration == raw["benchmark_duration"]["avg"]
    assert r.request_throughput == raw["request_throughput"]["avg"]
    assert r.output_throughput == raw["output_token_throughput"]["avg"]
    ttft = raw["time_to_first_token"]
    assert (r.mean_ttft_ms, r.median_ttft_ms) == (ttft["avg"], ttft["p50"])
    assert r.percentiles("ttft") == {f"p{p}": ttft[f"p{p}"]
                                     for p in (1, 5, 10, 25, 50, 75, 90, 95, 99)}
    # AIPerf's inter_token_latency is (latency - TTFT) / (OSL - 1): vLLM's TPOT
    assert r.mean_tpot_ms == raw["inter_token_latency"]["avg"]
    assert r.percentile("tpot", 99) == raw["inter_token_latency"]["p99"]
    assert r.mean_e2el_ms == raw["request_latency"]["avg"]
    # sample std, min, max stay AIPerf's; so do the metrics vLLM has no key for
    assert r.std_ttft_ms is None and r.extra["time_to_first_token"]["std"] == ttft["std"]
    assert r.extra["time_to_first_token"]["max"] == ttft["max"]
    assert r.extra["output_token_throughput_per_user"]["avg"] == 19.32421
    assert r.extra["schema_version"] == "1.3"
    assert r.mean_itl_ms is None and r.total_token_throughput is None
    assert r.request_rate is None and r.max_output_tokens_per_s is None


def test_records_layout_of_the_first_releases() -> None:
    [r] = import_results(DATA / "aiperf_profile_export_records.json")
    assert (r.source_version, r.model_id, r.max_concurrency, r.completed) == (
        None, "Qwen/Qwen3-0.6B", 5, 100)
    assert (r.mean_ttft_ms, r.median_ttft_ms, r.percentile("ttft", 5)) == (18.26, 15.34, 12.01)
    assert (r.mean_tpot_ms, r.mean_e2el_ms, r.duration, r.request_throughput) == (
        11.31, 487.2, 10.31, 9.7)
    assert r.failed is None  # no error_request_count: not a count of zero


def test_units_are_converted_exactly() -> None:
    raw = _export()
    raw["request_latency"] = {"unit": "sec", "avg": 6.5503, "p50": 5.7999, "p99": 9.3816}
    raw["benchmark_duration"] = {"unit": "ms", "avg": 15196.6}
    [r] = parse_results(json.dumps(raw), "s.json")
    assert (r.mean_e2el_ms, r.median_e2el_ms, r.percentile("e2el", 99)) == (6550.3, 5799.9,
                                                                           9381.6)
    assert r.duration == 15.1966


def test_an_unknown_unit_is_malformed() -> None:
    raw = _export()
    raw["time_to_first_token"]["unit"] = "tokens"
    with pytest.raises(UsageError, match=r"a\.json: time_to_first_token\.unit: 'tokens' is not"):
        parse_results(json.dumps(raw), "a.json")
