"""``vllm bench serve`` console blocks (three layouts) and result JSON / JSON Lines."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.importers import ImportedResult, import_results, parse_results

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"


def _one(name: str) -> ImportedResult:
    [result] = import_results(DATA / name)
    return result


def test_benchmark_serving_sweep_gives_one_result_per_block() -> None:
    first, second = import_results(DATA / "vllm_console_benchmark_serving.txt")
    assert (first.source_format, first.source_index, second.source_index) == (
        "vllm-console", 0, 1)
    assert (first.max_concurrency, second.max_concurrency) == (32, 64)
    assert first.request_rate == "inf" and first.burstiness == 1.0
    assert (first.completed, first.duration, first.total_input_tokens,
            first.total_output_tokens) == (32, 79.87, 65536, 32768)
    assert (first.request_throughput, first.output_throughput,
            first.total_token_throughput) == (0.4, 410.26, 1230.78)  # "Total Token" (sic)
    assert (first.mean_ttft_ms, first.median_ttft_ms, first.percentile("ttft", 99)) == (
        7279.56, 7099.88, 10999.46)
    assert (first.mean_tpot_ms, first.percentile("tpot", 99)) == (70.14, 72.63)
    assert (second.mean_itl_ms, second.median_itl_ms, second.percentile("itl", 99)) == (
        94.88, 91.23, 101.55)
    # this layout prints no failed count, peaks, E2EL (not asked for), version or model
    assert first.failed is None and first.max_output_tokens_per_s is None
    assert first.mean_e2el_ms is None and first.std_ttft_ms is None
    assert first.source_version is None and first.model_id is None
    assert first.extra == {}


def test_serve_2025_layout_with_goodput_percentiles_and_e2el() -> None:
    r = _one("vllm_console_serve_2025.txt")
    assert (r.completed, r.failed, r.max_concurrency, r.request_rate) == (997, 3, 64, 4.0)
    assert (r.duration, r.request_goodput, r.max_output_tokens_per_s,
            r.max_concurrent_requests) == (250.33, 3.71, 761.0, 43)  # "43.00" read as 43
    assert r.total_token_throughput == 2548.09
    assert r.percentiles("ttft") == {"p50": 55.61, "p90": 88.01, "p99": 142.33}
    assert r.median_itl_ms == 17.0
    assert (r.mean_e2el_ms, r.median_e2el_ms, r.percentile("e2el", 90)) == (
        2372.56, 2351.01, 2702.77)


def test_serve_2026_layout_with_client_queue_and_speculative_decoding() -> None:
    r = _one("vllm_console_serve_2026.txt")
    assert (r.completed, r.failed, r.max_concurrency, r.request_rate) == (398, 2, 16, 8.0)
    assert r.percentiles("ttft") == {"p99": 201.34, "p99.9": 240.01}
    assert r.percentile("tpot", "99.9") == 13.0
    assert (r.mean_client_queue_time_ms, r.median_client_queue_time_ms,
            r.percentile("client_queue_time", 99)) == (3.12, 0.06, 61.23)
    assert (r.mean_e2el_including_client_queue_ms,
            r.percentile("e2el_including_client_queue", "99.9")) == (2092.64, 2950.01)
    assert r.extra == {
        "spec_decode_acceptance_rate": 70.15, "spec_decode_acceptance_length": 2.4,
        "spec_decode_num_drafts": 33122, "spec_decode_draft_tokens": 66244,
        "spec_decode_accepted_tokens": 46471,
        "spec_decode_per_position_acceptance_pct": [90.33, 49.95]}


def test_result_json_keeps_its_keys_and_drops_per_request_lists() -> None:
    r = _one("vllm_result.json")
    raw = json.loads((DATA / "vllm_result.json").read_text())
    assert r.source_format == "vllm-json"
    for key in ("date", "backend", "endpoint_type", "model_id", "tokenizer_id", "num_prompts",
                "request_rate", "burstiness", "max_concurrency", "duration", "completed",
                "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
                "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
                "max_concurrent_requests", "rtfx", "mean_ttft_ms", "median_ttft_ms",
                "std_ttft_ms", "mean_itl_ms"):
        assert getattr(r, key) == raw[key], key
    assert r.request_goodput is None and r.label is None
    assert r.percentile("ttft", "99.9") == raw["p99.9_ttft_ms"]
    assert r.extra["tp"] == "8"  # --metadata
    assert r.extra["spec_decode_per_position_acceptance_rates"] == [0.9033125, 0.4995341]
    assert "latencies" not in r.extra and "queue_times" not in r.extra
    assert r.mean_e2el_ms is None  # not in --percentile-metrics


def test_append_result_json_lines_and_the_old_goodput_key() -> None:
    old = {"backend": "vllm", "model_id": "m", "num_prompts": 10, "request_rate": "inf",
           "burstiness": 1.0, "max_concurrency": None, "duration": 12.5, "completed": 10,
           "total_input_tokens": 1000, "total_output_tokens": 500, "request_throughput": 0.8,
           "request_goodput:": 0.64, "output_throughput": 40.0, "total_token_throughput": 120.0,
           "input_lens": [100] * 10, "mean_ttft_ms": 20.5, "p99_ttft_ms": 30.25}
    new = {**old, "request_goodput": None, "failed": 0, "burstiness": float("inf")}
    del new["request_goodput:"]
    text = json.dumps(old) + "\n" + json.dumps(new)
    first, second = parse_results(text, "runs.jsonl")
    assert first.request_goodput == 0.64 and first.failed is None
    assert second.request_goodput is None and second.failed == 0
    assert second.burstiness == "inf"
    assert "input_lens" not in first.extra


def test_a_bad_value_names_the_file_the_line_and_the_label() -> None:
    text = re.sub(r"(Failed requests:\s+)3", r"\1x",
                  (DATA / "vllm_console_serve_2025.txt").read_text())
    with pytest.raises(UsageError, match=r"^bad\.log: line 10: Failed requests: 'x' is not"):
        parse_results(text, "bad.log")
    with pytest.raises(UsageError, match=r"r\.json: completed: 'ten' is not a number"):
        parse_results(json.dumps({"completed": "ten", "duration": 1.0}), "r.json")


def test_a_block_without_its_required_lines_is_malformed() -> None:
    text = "\n".join(["============ Serving Benchmark Result ============",
                      "Successful requests: 3", "=" * 50])
    with pytest.raises(UsageError, match="no 'Benchmark duration \\(s\\):' line") as err:
        parse_results(text, "short.log")
    assert err.value.exit_code == 2


def _block(*lines: str) -> str:
    return "\n".join(["============ Serving Benchmark Result ============",
                      "Successful requests: 3", "Benchmark duration (s): 1.50", *lines,
                      "=" * 50])


def test_a_label_of_a_newer_version_is_kept_not_lost() -> None:
    [r] = parse_results(_block("Mean TTFB (ms): 1.00"), "new.log")
    assert r.extra == {"unrecognized_lines": ["Mean TTFB (ms): 1.00"]}
    assert (r.completed, r.duration) == (3, 1.5)


def test_a_label_twice_in_one_block_is_malformed() -> None:
    with pytest.raises(UsageError, match=r"twice\.log: line 5: Mean TTFT \(ms\) appears twice"):
        parse_results(_block("Mean TTFT (ms): 1.00", "Mean TTFT (ms): 2.00"), "twice.log")
