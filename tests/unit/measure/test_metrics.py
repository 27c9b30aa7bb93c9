"""Aggregates: keys named like vllm bench serve's mean what vLLM 0.32 means; ours are named
apart (text TTFT, measured ITL, peaks in tokens, true overlap); empty sets are null."""

from __future__ import annotations

import pytest

from benchlib.measure import percentile_key, summarize

from ._outcomes import MS, outcome


def test_reference_definitions() -> None:
    a = outcome(0, 0, 10, [5, 5, 5], 12)  # 4 chunks of 3 tokens
    b = outcome(1, 0, 20, [10], 2)
    c = outcome(2, 1, 0, [], 0, ok=False)
    counts = [[3.0] * 4, [1.0, 1.0], []]
    r = summarize([a, b, c], counts, duration_ns=100 * MS, percentiles=[50, 99.9],
                  goodput={"ttft": 15})
    assert r.completed == 2 and r.failed == 1
    assert r.total_output_tokens == 14 and r.total_input_tokens == 20
    assert r.median_ttft_ms == pytest.approx(15)
    # TPOT = (E2EL - TTFT) / (N - 1): a: 15/11, b: 10/1
    assert r.mean_tpot_ms == pytest.approx((15 / 11 + 10) / 2)
    assert r.mean_itl_ms == pytest.approx((5 * 3 + 10) / 4)
    assert r.mean_tokens_per_chunk == pytest.approx(14 / 6)
    assert r.request_goodput == pytest.approx(1 / 0.1)
    assert r.output_throughput == pytest.approx(140)
    assert r.percentile("ttft", 99.9) is not None and r.percentile("e2el", 50) is not None
    assert r.errors == ["", "", "HTTP 500: x"]
    assert r.output_lens == [12, 2, 0]
    assert r.latencies == pytest.approx([0.025, 0.03, 0.0])
    # per-token ITL: each 5 ms gap over its chunk's 3 tokens
    assert r.median_itl_per_token_ms == pytest.approx(5 / 3)


def test_role_chunk_starts_the_reference_ttft_not_ours() -> None:
    # vLLM's chat path times the first event with non-empty choices, a role-only chunk too
    o = outcome(0, 0, 40, [10, 10], 3, role_ms=1)
    r = summarize([o], [[1.0] * 3], duration_ns=100 * MS, percentiles=[50])
    assert r.mean_ttft_ms == pytest.approx(1) and r.mean_ttft_text_ms == pytest.approx(40)
    assert r.itls == [pytest.approx([0.039, 0.01, 0.01])]  # role → text is a vLLM ITL
    assert r.mean_itl_text_only_ms == pytest.approx(10)
    assert r.mean_tpot_ms == pytest.approx(59 / 2)  # (E2EL − vLLM TTFT)/(N − 1)
    assert r.mean_tpot_text_ms == pytest.approx(20 / 2)


def test_gaps_inside_one_read_are_counted_not_reported() -> None:
    o = outcome(0, 0, 10, [5, 0, 5], 4, same_read={1})
    r = summarize([o], [[1.0] * 4], duration_ns=50 * MS, percentiles=[50])
    assert r.timing.coalesced_gaps == 1
    assert r.mean_itl_text_only_ms == pytest.approx(5)  # the 0 is not an ITL
    assert r.mean_itl_ms == pytest.approx(10 / 3)  # the reference keeps it
    # per token: the read that carried two chunks spreads its 5 ms over both chunks' tokens
    assert sorted(r.itls[0]) == pytest.approx([0.0, 0.005, 0.005])
    assert r.median_itl_per_token_ms == pytest.approx(2.5)


def test_peaks_both_ways() -> None:
    # three back-to-back requests inside one second never overlap: the reference says 3
    rs = [outcome(i, i * 100, 10, [10], 6) for i in range(3)]
    r = summarize(rs, [[3.0, 3.0]] * 3, duration_ns=300 * MS, percentiles=[50])
    assert r.max_concurrent_requests == 3 and r.peak_concurrent_requests == 1
    # the reference counts chunk events per second; ours counts tokens
    assert r.max_output_tokens_per_s == 6 and r.peak_output_tokens_per_s == 18


def test_queue_time_keys_follow_the_reference() -> None:
    o = outcome(0, 10, 10, [10], 2)
    o.release_ns = 4 * MS
    r = summarize([o], [[1.0, 1.0]], duration_ns=50 * MS, percentiles=[50],
                  max_concurrency=1, request_rate=10.0)
    assert r.queue_times == [pytest.approx(0.006)]
    assert r.mean_client_queue_time_ms == pytest.approx(6)
    assert r.mean_e2el_including_client_queue_ms == pytest.approx(26)
    plain = summarize([o], [[1.0, 1.0]], duration_ns=50 * MS, percentiles=[50])
    assert "mean_client_queue_time_ms" not in plain.to_json()  # only with --max-concurrency


def test_goodput_counts_only_requests_meeting_every_slo() -> None:
    fast = outcome(0, 0, 10, [2, 2], 3)
    slow_first = outcome(1, 0, 30, [2, 2], 3)
    slow_decode = outcome(2, 0, 10, [8, 8], 3)
    counts = [[1.0] * 3] * 3
    r = summarize([fast, slow_first, slow_decode], counts, duration_ns=1000 * MS,
                  percentiles=[50], goodput={"ttft": 20, "tpot": 5})
    assert r.request_goodput == pytest.approx(1.0)
    r = summarize([fast, slow_first, slow_decode], counts, duration_ns=1000 * MS,
                  percentiles=[50], goodput={"tpot": 5})
    assert r.request_goodput == pytest.approx(2.0)


def test_percentile_keys() -> None:
    assert percentile_key(99) == "p99" and percentile_key(99.9) == "p99.9"


def test_no_success_gives_null_not_zero() -> None:
    r = summarize([outcome(0, 0, 0, [], 0, ok=False)], [[]], duration_ns=0, percentiles=[99])
    assert r.completed == 0 and r.request_throughput is None
    assert r.mean_ttft_ms is None and r.percentile("itl", 99) is None
    assert r.max_output_tokens_per_s is None and r.mean_tokens_per_chunk is None
    assert r.timing.exact_ttft_fraction is None and r.timing.client_bound is None


def test_buffered_streams_are_counted() -> None:
    smooth = outcome(0, 0, 10, [5, 5, 5], 4)
    burst = outcome(1, 0, 10, [0, 0, 0], 4)
    r = summarize([smooth, burst], [[1.0] * 4, [1.0] * 4], duration_ns=50 * MS,
                  percentiles=[50])
    assert r.buffered_streams == 1


def test_text_chunks_per_s_is_the_seed000_scripts_tokens_per_sec() -> None:
    # seed 000's script: (chunks − 1) / (end − first text), chunks counted as tokens. A: 4
    # text chunks 5 ms apart after a role chunk → 3 / 15 ms = 200/s whatever tokens each held
    # (12 here: MTP's several per chunk); b: 2 chunks 10 ms apart → 100/s
    a = outcome(0, 0, 10, [5, 5, 5], 12, role_ms=2)
    b = outcome(1, 0, 20, [10], 2)
    r = summarize([a, b], [[3.0] * 4, [1.0, 1.0]], duration_ns=100 * MS, percentiles=[50])
    assert r.median_text_chunks_per_s == pytest.approx((200 + 100) / 2)
    assert r.mean_text_chunks_per_s == pytest.approx(150)
    # the per-token rate differs under several tokens a chunk: 11 tokens / 15 ms
    assert r.mean_tpot_text_ms is not None
    assert 1000 / r.mean_tpot_text_ms != pytest.approx(r.median_text_chunks_per_s)
    # max ITL: vLLM's gaps (role → first text 8 ms, then 5s; b: 10)
    assert r.max_itl_ms == pytest.approx(10)


def test_one_chunk_has_no_chunk_rate() -> None:
    r = summarize([outcome(0, 0, 10, [], 1)], [[1.0]], duration_ns=100 * MS, percentiles=[50])
    assert r.median_text_chunks_per_s is None and r.max_itl_ms is None


def test_the_mean_of_each_requests_decode_rate_stands_beside_tpot() -> None:
    """Seed 003 states speed as each request's own decode rate, then the mean: TPOTs of 5 and
    20 ms give (200 + 50) / 2 = 125 tok/s, not 1000 / the mean TPOT (80) nor 1000 / the
    median (80)."""
    a = outcome(0, 0, 10, [5, 5, 5], 4)
    b = outcome(1, 0, 10, [20, 20, 20], 4)
    r = summarize([a, b], [[1.0] * 4, [1.0] * 4], duration_ns=100 * MS, percentiles=[50])
    assert r.mean_request_decode_rate == pytest.approx(125)
    assert r.mean_tpot_ms is not None and 1000 / r.mean_tpot_ms == pytest.approx(80)
    none = summarize([outcome(0, 0, 10, [], 1)], [[1.0]], duration_ns=100 * MS,
                     percentiles=[50])
    assert none.mean_request_decode_rate is None
