"""The aggregate rules one at a time, at their edges: which requests count, where a bucket
starts, what an empty set gives, which SLO comparisons are inclusive. Each test pins a rule
that mutation testing (tools/mutation.py) found no other test held; the hand-counted
figures are worked out in the comments."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from benchlib.measure import RequestOutcome, summarize
from benchlib.measure.stats._metrics import _figure_bounds, _per_token_itls, _reference_peaks

from ._outcomes import MS, outcome

NS = 1_000_000_000


def _run(outcomes: list[RequestOutcome], counts: list[list[float]] | None = None, *,
         duration_ns: int = NS, percentiles: tuple[float, ...] = (50,),
         goodput: dict[str, float] | None = None, max_concurrency: int | None = None,
         request_rate: float = math.inf) -> dict[str, Any]:
    """summarize's result JSON, each chunk one token unless ``counts`` says."""
    if counts is None:
        counts = [[1.0] * len(o.chunk_times_ns) for o in outcomes]
    return summarize(outcomes, counts, duration_ns=duration_ns, percentiles=percentiles,
                     goodput=goodput, max_concurrency=max_concurrency,
                     request_rate=request_rate).to_json()


# --- the statistics of a set ---------------------------------------------------------------

def test_an_empty_set_has_every_statistic_null() -> None:
    """No success: every mean, median, std and percentile is null (never NaN, never 0), as are
    the peaks and the server's prompt total."""
    got = _run([outcome(0, 0, 0, [], 0, ok=False)], [[]], duration_ns=0, percentiles=(50, 99))
    for name in ("ttft", "tpot", "itl", "e2el", "ttft_text", "tpot_text", "itl_text_only",
                 "itl_per_token"):
        for stat in ("mean", "median", "std", "p50", "p99"):
            assert got[f"{stat}_{name}_ms"] is None, (stat, name)
    assert got["peak_concurrent_requests"] is None and got["max_concurrent_requests"] is None
    assert got["peak_output_tokens_per_s"] is None and got["total_input_tokens_server"] is None
    assert got["median_text_chunks_per_s"] is None and got["mean_text_chunks_per_s"] is None


def test_statistics_are_numpys_mean_median_population_std_and_linear_percentile() -> None:
    """TTFTs 10, 20, 60 ms: mean 30, median 20, std (ddof 0) √((400 + 100 + 900) / 3),
    p50 20, p90 by linear interpolation 20 + 0.8 · 40 = 52."""
    got = _run([outcome(i, 0, t, [], 1) for i, t in enumerate((10, 20, 60))],
               percentiles=(50, 90))
    assert got["mean_ttft_ms"] == pytest.approx(30)
    assert got["median_ttft_ms"] == pytest.approx(20)
    assert got["std_ttft_ms"] == pytest.approx((1400 / 3) ** 0.5)
    assert got["p50_ttft_ms"] == pytest.approx(20) and got["p90_ttft_ms"] == pytest.approx(52)


# --- buffered streams and chunk rates ------------------------------------------------------

@pytest.mark.parametrize(("gaps_ms", "buffered"), [
    ([0, 0], True),          # three chunks at one instant
    ([0.5, 0.4999], True),   # three chunks within 1 ms
    ([0.5, 0.5], False),     # first to last exactly 1 ms: not "within"
    ([0], False),            # two chunks are too few to call buffered
    ([0, 5], False),         # the first two together, the last 5 ms later
    ([5, 0], False),         # the last two together, the first 5 ms before
    ([0, 0, 0, 5], False),   # all but the last together
])
def test_a_stream_is_buffered_when_three_or_more_chunks_arrive_within_a_millisecond(
        gaps_ms: list[float], buffered: bool) -> None:
    """The span from first to last chunk decides, strictly under 1 ms, and only with 3+
    chunks."""
    got = _run([outcome(0, 0, 10, gaps_ms, len(gaps_ms) + 1)])
    assert got["buffered_streams"] == int(buffered)


def test_one_text_chunk_has_no_chunk_rate_even_when_the_stream_ends_later() -> None:
    """A single text chunk followed by an empty finish event: E2EL passes the first text, but
    one chunk has no rate (the seed-000 script divides by chunks − 1)."""
    o = outcome(0, 0, 10, [], 1)
    o.latency_ns = o.end_ns = 30 * MS
    assert _run([o])["median_text_chunks_per_s"] is None


def test_text_free_requests_count_their_choices_events() -> None:
    """Tokens without text: the rate counts the choices events (one more than the ITLs), from
    the first event to the last: 3 events over 20 ms → 100/s."""
    o = RequestOutcome(index=0, prompt_len=4, start_ns=0, success=True, ttft_ns=10 * MS,
                       ttft_lower_ns=10 * MS, latency_ns=30 * MS, latency_lower_ns=30 * MS,
                       itl_ns=[10 * MS, 10 * MS], ttft_text_ns=10 * MS,
                       ttft_text_lower_ns=10 * MS, text_free=True, output_tokens=3,
                       output_tokens_source="usage", end_ns=30 * MS)
    got = _run([o])
    assert got["median_text_chunks_per_s"] == pytest.approx(100)
    assert got["text_free_requests"] == 1


# --- the reference's per-second peaks, and ours --------------------------------------------

def _timed(i: int, start_ns: int, ttft_ns: int, gaps_ns: list[int]) -> RequestOutcome:
    """A success whose choices events (all text) arrive ``ttft_ns`` after ``start_ns``, then
    ``gaps_ns`` apart; one token each."""
    times = list(itertools.accumulate([start_ns + ttft_ns, *gaps_ns]))
    return RequestOutcome(
        index=i, prompt_len=1, start_ns=start_ns, success=True, ttft_ns=ttft_ns,
        ttft_lower_ns=ttft_ns, latency_ns=times[-1] - start_ns,
        latency_lower_ns=times[-1] - start_ns, itl_ns=list(gaps_ns), ttft_text_ns=ttft_ns,
        ttft_text_lower_ns=ttft_ns, ttft_text_exact=True, text_gaps_ns=list(gaps_ns),
        text_gap_measured=[True] * len(gaps_ns), chunk_times_ns=times,
        chunk_reads=list(range(len(times))), chunk_texts=["x"] * len(times),
        output_tokens=len(times), output_tokens_source="usage", end_ns=times[-1])


def _vllm_peaks(ok: list[RequestOutcome]) -> tuple[int, int]:
    """vLLM 0.32's ``max_output_tokens_per_s`` and ``max_concurrent_requests``, counted again
    in whole nanoseconds: choices events per whole second since the first start, and requests
    whose [start second, end second] holds that second."""
    first = min(o.start_ns for o in ok)
    events: dict[int, int] = {}
    active: dict[int, int] = {}
    for o in ok:
        assert o.ttft_ns is not None and o.latency_ns is not None
        for t in itertools.accumulate([o.start_ns + o.ttft_ns, *o.itl_ns]):
            events[(t - first) // NS] = events.get((t - first) // NS, 0) + 1
        for s in range((o.start_ns - first) // NS, (o.start_ns + o.latency_ns - first) // NS + 1):
            active[s] = active.get(s, 0) + 1
    return max(events.values()), max(active.values())


def test_reference_peaks_bucket_whole_seconds_from_the_first_start() -> None:
    """First start 0.5 s. A: events 0.6, 1.6, 2.6, 3.6 s (buckets 0-3, active 0-3); B (from
    1.8 s): 2.1, 2.2, 2.3, 3.3 (buckets 1,1,1,2; active 1-2); C (from 3.7 s): 3.8 (bucket 3).
    Events per second 1, 4, 2, 2 → 4; requests per second 1, 2, 2, 2 → 2."""
    a = _timed(0, 500 * MS, 100 * MS, [NS, NS, NS])
    b = _timed(1, 1800 * MS, 300 * MS, [100 * MS, 100 * MS, NS])
    c = _timed(2, 3700 * MS, 100 * MS, [])
    assert _reference_peaks([a, b, c]) == (4.0, 2)
    # three requests that each live in one second, the second and third in the same one
    d, e, f = (_timed(i, s * MS, 100 * MS, [100 * MS]) for i, s in ((0, 300), (1, 2400),
                                                                     (2, 2500)))
    assert _reference_peaks([d, e, f]) == (4.0, 2)
    assert _reference_peaks([]) == (None, None)


@given(st.integers(0, 5 * NS),
       st.lists(st.tuples(st.integers(0, 3 * NS), st.integers(0, 2 * NS),
                          st.lists(st.integers(0, NS), max_size=4)), min_size=1, max_size=5))
def test_reference_peaks_match_vllms_buckets_for_any_arrivals(
        base: int, requests: list[tuple[int, int, list[int]]]) -> None:
    """Any starts, TTFTs and gaps (away from a whole-second edge, where seconds as floats may
    round either way): the same peaks as vLLM's bucketing, counted in integers."""
    ok = [_timed(i, base + s, t, g) for i, (s, t, g) in enumerate(requests)]
    first = min(o.start_ns for o in ok)
    edges = [t for o in ok for t in (o.start_ns, *o.chunk_times_ns)]
    # within 1 µs of a later bucket's edge the float seconds may fall either side
    assume(all(t == first or 1000 <= (t - first) % NS <= NS - 1000 for t in edges))
    events, active = _reference_peaks(ok)
    assert (events, active) == _vllm_peaks(ok)


def test_our_token_peak_buckets_whole_seconds_from_the_first_start() -> None:
    """First start 0.3 s. P's chunks at 0.4, 1.3, 2.3 s hold 1, 2, 4 tokens; Q's at 0.9 and
    1.2 s hold 3 and 3. Seconds since 0.3 s: [0.1, 0.6, 0.9] → 7 tokens, [1.0] → 2 (1.0 s
    exactly is the second bucket), [2.0] → 4. Peak 7."""
    p = _timed(0, 300 * MS, 100 * MS, [900 * MS, NS])
    q = _timed(1, 800 * MS, 100 * MS, [300 * MS])
    got = _run([p, q], [[1.0, 2.0, 4.0], [3.0, 3.0]])
    assert got["peak_output_tokens_per_s"] == 7.0
    # the same with P's middle chunk 1 ns earlier: it joins the first second
    p2 = _timed(0, 300 * MS, 100 * MS, [900 * MS - 1, NS + 1])
    assert _run([p2, q], [[1.0, 2.0, 4.0], [3.0, 3.0]])["peak_output_tokens_per_s"] == 9.0


@pytest.mark.parametrize(("spans_ms", "peak"), [
    ([(0, 10), (20, 40), (25, 40)], 2),   # the peak comes after an end
    ([(0, 10), (10, 20), (20, 30)], 1),   # an end and a start at one instant do not overlap
    ([(0, 30), (5, 25), (10, 20)], 3),    # nested
])
def test_true_overlap_is_the_most_requests_in_flight_at_one_instant(
        spans_ms: list[tuple[int, int]], peak: int) -> None:
    """Requests [start, end): the greatest number in flight together."""
    rs = [_timed(i, s * MS, (e - s) * MS, []) for i, (s, e) in enumerate(spans_ms)]
    assert _run(rs)["peak_concurrent_requests"] == peak


# --- per-token ITL ------------------------------------------------------------------------

def test_per_token_gaps_spread_over_tokens_and_carry_sub_token_chunks() -> None:
    """Gaps 2, 3, 5 ms before chunks of 0.3, 0.3 and 1 tokens: the two fractional chunks
    carry their gaps on, so the whole chunk's one token took 2 + 3 + 5 = 10 ms; a one-token
    chunk gives its own gap."""
    o = _timed(0, 0, MS, [2 * MS, 3 * MS, 5 * MS])
    assert _per_token_itls(o, [1.0, 0.3, 0.3, 1.0]) == pytest.approx([10.0])
    assert _per_token_itls(o, [1.0, 1.0, 1.0, 1.0]) == pytest.approx([2.0, 3.0, 5.0])
    # 1.5 tokens after a 0.5 one: (3 + 2) ms over 1.5 tokens, written round(1.5) = 2 times
    assert _per_token_itls(o, [1.0, 0.5, 1.5, 2.0]) == pytest.approx([10 / 3, 10 / 3, 2.5, 2.5])


def test_per_token_gaps_of_a_first_read_with_two_chunks() -> None:
    """Chunks that came out of one read with the first text are TTFT's: no gap is made up
    for their tokens (it was written 0 ms once); the next read's tokens share its 4 ms."""
    o = outcome(0, 0, 10, [0, 4], 3, same_read={0})
    assert _per_token_itls(o, [1.0, 1.0, 1.0]) == pytest.approx([4.0])
    o2 = outcome(0, 0, 10, [0, 0, 4], 4, same_read={0, 1})
    assert _per_token_itls(o2, [1.0, 1.0, 1.0, 2.0]) == pytest.approx([2.0, 2.0])
    # a sub-token chunk in the first read carries nothing on either
    assert _per_token_itls(o, [1.0, 0.5, 1.0]) == pytest.approx([4.0])
    # the last two chunks in one read: its 4 ms spread over both chunks' tokens
    last = outcome(0, 0, 10, [4, 0], 3, same_read={1})
    assert _per_token_itls(last, [1.0, 1.0, 1.0]) == pytest.approx([2.0, 2.0])


def test_token_counts_for_fewer_chunks_give_the_rest_no_tokens() -> None:
    """Counts cover the first chunks only: the later chunks hold no tokens, and their gaps
    are carried, never indexed past the counts."""
    o = _timed(0, 0, MS, [2 * MS, 3 * MS])
    assert _per_token_itls(o, [1.0, 1.0]) == pytest.approx([2.0])
    assert _run([o], [[1.0, 1.0]])["peak_output_tokens_per_s"] == 2.0


# --- the bounds the timing check uses ------------------------------------------------------

def test_bounds_of_an_outcome_without_lower_bounds_are_its_values() -> None:
    """A request that carries no lower bounds: each figure's bounds are the value itself, and
    it is left out of the exact-stamp share (which needs the first text's bound)."""
    o = outcome(0, 0, 10, [5], 3)
    o.ttft_lower_ns = o.latency_lower_ns = o.ttft_text_lower_ns = None
    got = _figure_bounds([o])
    assert got["ttft"] == got["ttft_text"] == ([10.0], [10.0], [10.0])
    assert got["e2el"] == ([15.0], [15.0], [15.0])
    assert got["tpot"] == ([2.5], [2.5], [2.5])
    assert summarize([o], [[1.0, 1.0]], duration_ns=NS,
                     percentiles=[50]).timing.exact_ttft_fraction is None


def test_tpot_bounds_need_two_tokens() -> None:
    """One output token has no TPOT (and no division by zero); two have one."""
    got = _figure_bounds([outcome(0, 0, 10, [], 1), outcome(1, 0, 10, [6], 2)])
    assert got["tpot"] == ([6.0], [6.0], [6.0])
    assert len(got["e2el"][0]) == 2


# --- throughput, goodput and what counts --------------------------------------------------

def test_a_zero_duration_gives_no_rates() -> None:
    got = _run([outcome(0, 0, 10, [5], 2)], duration_ns=0, goodput={"ttft": 100})
    assert got["request_throughput"] is None and got["output_throughput"] is None
    assert got["request_goodput"] is None and got["total_token_throughput"] is None


@pytest.mark.parametrize("slo", [{"ttft": 10.0}, {"tpot": 5.0}, {"e2el": 15.0}])
def test_goodput_slos_are_inclusive(slo: dict[str, float]) -> None:
    """A request at exactly the SLO (TTFT 10 ms, TPOT 5 ms, E2EL 15 ms) meets it; 1 % under
    the SLO it does not."""
    o = outcome(0, 0, 10, [5], 2)
    assert _run([o], goodput=slo, duration_ns=NS)["request_goodput"] == pytest.approx(1)
    tight = {k: v * 0.99 for k, v in slo.items()}
    assert _run([o], goodput=tight, duration_ns=NS)["request_goodput"] == 0


def test_goodput_takes_tpot_as_zero_for_one_token() -> None:
    """vLLM: a request of one output token has TPOT 0 for goodput, so it meets any TPOT
    SLO."""
    got = _run([outcome(0, 0, 10, [], 1)], goodput={"tpot": 0.5}, duration_ns=NS)
    assert got["request_goodput"] == pytest.approx(1)


def test_ttft_from_schedule_counts_from_the_due_instant_of_a_paced_load() -> None:
    """Paced: due at 0, released at 2 ms, sent at 5 ms, first text 10 ms after the send →
    15 ms from the schedule; unpaced requests have no such figure."""
    o = outcome(0, 5, 10, [5], 2)
    o.paced, o.due_ns, o.release_ns = True, 0, 2 * MS
    got = _run([o], max_concurrency=1, request_rate=10.0)
    assert got["mean_ttft_from_schedule_ms"] == pytest.approx(15)
    assert got["median_ttft_from_schedule_ms"] == pytest.approx(15)
    assert got["p50_ttft_from_schedule_ms"] == pytest.approx(15)
    assert got["mean_e2el_including_client_queue_ms"] == pytest.approx(15 + 3)
    o.paced = False
    assert "mean_ttft_from_schedule_ms" not in _run([o])


def test_failed_requests_write_zero_length_and_latency_whatever_they_got() -> None:
    """A stream cut after some events failed: its output length and E2EL are written 0, as
    vLLM writes them, though it carried tokens and events."""
    o = outcome(0, 0, 10, [5], 3)
    o.success, o.error = False, "stream ended without [DONE]"
    got = _run([o, outcome(1, 0, 10, [5], 2)])
    assert got["output_lens"] == [0, 2] and got["latencies"] == pytest.approx([0.0, 0.015])


def test_output_token_sources_and_server_prompt_counts_are_counted_per_success() -> None:
    a, b, c = outcome(0, 0, 10, [], 1), outcome(1, 0, 10, [], 1), outcome(2, 0, 10, [], 1)
    b.output_tokens_source = "tokenizer"
    got = _run([a, b, c])
    assert got["output_tokens_source"] == {"usage": 2, "tokenizer": 1}
    assert got["total_input_tokens_server"] is None  # none sent a prompt count
    b.server_prompt_tokens = 7
    assert _run([a, b, c])["total_input_tokens_server"] == 7


def test_misaligned_inputs_are_refused_not_truncated() -> None:
    """Token counts for a different number of requests, or text gaps without a measured flag
    each, are an error, not a silently shorter zip."""
    o = outcome(0, 0, 10, [5, 5], 3)
    with pytest.raises(ValueError, match="zip"):
        summarize([o], [], duration_ns=NS, percentiles=(50,))
    o.text_gap_measured = [True, True, True]
    with pytest.raises(ValueError, match="zip"):
        summarize([o], [[1.0] * 3], duration_ns=NS, percentiles=(50,))


def test_the_timing_self_check_counts_every_first_text_it_has_bounds_for() -> None:
    """timing_of: each successful request whose first text has both bounds enters the TTFT
    self-check; a failed one does not (its bounds say nothing of a stream)."""
    from benchlib.measure.stats._metrics import timing_of

    ok = [outcome(i, 0, 5 + i, [1.0], 2) for i in range(3)]
    timing = timing_of([*ok, outcome(9, 0, 5, [1.0], 2, ok=False)])
    assert timing.exact_ttft_fraction == 1.0
    assert timing.max_ttft_uncertainty_ms == 0.0
    ok[0].ttft_text_lower_ns = (ok[0].ttft_text_ns or 0) - 2 * MS
    ok[0].ttft_text_exact = False
    widened = timing_of(ok)
    assert widened.exact_ttft_fraction == pytest.approx(2 / 3)
    assert widened.max_ttft_uncertainty_ms == pytest.approx(2.0)


def test_no_audio_means_an_rtfx_of_zero() -> None:
    """vLLM's rtfx (audio seconds per second) is 0 for text, never left out or 1."""
    assert _run([outcome(0, 0, 5, [1.0], 2)])["rtfx"] == 0.0
