"""Aggregates follow vllm bench serve's definitions and keys; peaks are in tokens."""

from __future__ import annotations

import pytest

from benchlib.measure import RequestOutcome, percentile_key, summarize

MS = 1_000_000


def outcome(i: int, start_ms: float, ttft_ms: float, gaps_ms: list[float], tokens: int,
            ok: bool = True) -> RequestOutcome:
    start = int(start_ms * MS)
    times = [start + int(ttft_ms * MS)]
    for g in gaps_ms:
        times.append(times[-1] + int(g * MS))
    o = RequestOutcome(index=i, prompt_len=10, start_ns=start, success=ok,
                       error="" if ok else "HTTP 500: x")
    if ok:
        o.ttft_ns = int(ttft_ms * MS)
        o.itl_ns = [int(g * MS) for g in gaps_ms]
        o.latency_ns = times[-1] - start
        o.end_ns = times[-1]
        o.chunk_times_ns = times
        o.chunk_texts = ["x"] * len(times)
        o.output_tokens = tokens
        o.output_tokens_source = "usage"
    return o


def test_reference_definitions() -> None:
    a = outcome(0, 0, 10, [5, 5, 5], 12)  # 4 chunks of 3 tokens
    b = outcome(1, 0, 20, [10], 2)
    c = outcome(2, 1, 0, [], 0, ok=False)
    counts = [[3.0] * 4, [1.0, 1.0], []]
    r = summarize([a, b, c], counts, duration_ns=100 * MS, percentiles=[50, 99.9],
                  goodput={"ttft": 15})
    assert r["completed"] == 2 and r["failed"] == 1
    assert r["total_output_tokens"] == 14 and r["total_input_tokens"] == 20
    assert r["median_ttft_ms"] == pytest.approx(15)
    # TPOT = (E2EL - TTFT) / (N - 1): a: 15/11, b: 10/1
    assert r["mean_tpot_ms"] == pytest.approx((15 / 11 + 10) / 2)
    assert r["mean_itl_ms"] == pytest.approx((5 * 3 + 10) / 4)
    assert r["mean_tokens_per_chunk"] == pytest.approx(14 / 6)
    assert r["request_goodput"] == pytest.approx(1 / 0.1)
    assert r["output_throughput"] == pytest.approx(140)
    assert "p99.9_ttft_ms" in r and "p50_e2el_ms" in r
    assert r["errors"] == ["", "", "HTTP 500: x"]
    assert r["output_lens"] == [12, 2, 0]
    # per-token ITL: each 5 ms gap over its chunk's 3 tokens
    assert r["median_itl_per_token_ms"] == pytest.approx(5 / 3)


def test_peak_concurrency_is_true_overlap() -> None:
    # three back-to-back requests inside one second never overlap: the reference would say 3
    rs = [outcome(i, i * 100, 10, [10], 2) for i in range(3)]
    r = summarize(rs, [[1.0, 1.0]] * 3, duration_ns=300 * MS, percentiles=[50])
    assert r["max_concurrent_requests"] == 1


def test_peak_throughput_counts_tokens_not_chunks() -> None:
    rs = [outcome(0, 0, 10, [10, 10], 9)]
    r = summarize(rs, [[3.0, 3.0, 3.0]], duration_ns=50 * MS, percentiles=[50])
    assert r["max_output_tokens_per_s"] == 9


def test_percentile_keys() -> None:
    assert percentile_key(99) == "p99" and percentile_key(99.9) == "p99.9"


def test_no_success_is_not_nan() -> None:
    r = summarize([outcome(0, 0, 0, [], 0, ok=False)], [[]], duration_ns=0, percentiles=[99])
    assert r["completed"] == 0 and r["request_throughput"] == 0.0
    assert r["mean_ttft_ms"] == 0.0


def test_buffered_streams_are_counted() -> None:
    smooth = outcome(0, 0, 10, [5, 5, 5], 4)
    burst = outcome(1, 0, 10, [0, 0, 0], 4)
    r = summarize([smooth, burst], [[1.0] * 4, [1.0] * 4], duration_ns=50 * MS,
                  percentiles=[50])
    assert r["buffered_streams"] == 1
