"""Aggregate metrics: ``vllm bench serve``'s keys with its exact meaning, ours beside them.

A key that has the reference's name means what ``vllm bench serve`` 0.32 means by it
(``vllm/benchmarks/serve.py`` ``calculate_metrics`` and ``benchmark``), so a pandas frame of
both tools' files compares like with like:

* ``ttfts`` / ``*_ttft_ms``, ``itls`` / ``*_itl_ms``, ``latencies`` / ``*_e2el_ms``: first
  event with non-empty ``choices``, gaps between such events, last such event;
* ``*_tpot_ms``: (E2EL − TTFT)/(N − 1) for N > 1; goodput with TPOT 0 when N ≤ 1;
* ``total_input_tokens`` / ``input_lens``: the server's ``usage.prompt_tokens`` where it
  sent one, else the dataset's count (0.32 overwrites the prompt length with usage);
* ``duration``: from the start of the load (before the first arrival gap) to the end of the
  last request; ``*_throughput`` and ``request_goodput`` divide by it;
* ``max_output_tokens_per_s``: the busiest 1-s bucket of choices *events* (the reference
  counts chunks, not tokens); ``max_concurrent_requests``: most requests touching one 1-s
  bucket;
* ``queue_times`` / ``*_client_queue_time_ms``: release → send (a concurrency slot, a
  connection), and ``*_e2el_including_client_queue_ms`` (both as the reference reports them).

Where the reference would print 0 for an empty set (``np.mean(x or 0)``), we write ``null``:
no number is better than a made-up one.

Ours, named apart: ``*_ttft_from_schedule_ms`` (due instant → first text, with a paced
load: the client's queueing and late releases included), ``*_ttft_text_ms`` (first
generated text; a role-only chunk does not count), ``*_tpot_text_ms``,
``*_itl_text_only_ms`` (gaps between text events that were measured: two events of one
read are counted in ``timing.coalesced_gaps`` instead),
``*_itl_per_token_ms``, ``peak_output_tokens_per_s`` (tokens), ``peak_concurrent_requests``
(true overlap), ``total_input_tokens_server`` / ``_dataset``, ``duration_first_send_ms``,
``mean_tokens_per_chunk``, ``buffered_streams`` and the ``timing`` self-check
(:mod:`benchlib.measure.wire._timing`). The keys' types and descriptions are
:class:`~benchlib.measure.RunMetrics`'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchlib.measure.results._result import RunMetrics, percentile_key
from benchlib.measure.wire._request import RequestOutcome
from benchlib.measure.wire._timing import Timing, timing_summary

__all__ = ["summarize", "timing_of"]

_NS = 1e9
_MS = 1e6


def _stats(name: str, values_ms: Sequence[float], percentiles: Sequence[float]
           ) -> dict[str, float | None]:
    """mean / median / std (ddof 0) / linear percentiles, as numpy computes them; ``None``
    for every statistic of an empty set."""
    arr = np.asarray(values_ms, dtype=np.float64)
    empty = arr.size == 0
    out: dict[str, float | None] = {
        f"mean_{name}_ms": None if empty else float(np.mean(arr)),
        f"median_{name}_ms": None if empty else float(np.median(arr)),
        f"std_{name}_ms": None if empty else float(np.std(arr)),
    }
    for p in percentiles:
        out[f"{percentile_key(p)}_{name}_ms"] = None if empty else float(np.percentile(arr, p))
    return out


def _buffered(o: RequestOutcome, spread_ns: int = 1_000_000) -> bool:
    """Whether a stream of several chunks arrived all at once (within 1 ms): the server (or a
    proxy) buffered it, so its TPOT and ITL say nothing about decoding speed."""
    times = o.chunk_times_ns
    return len(times) >= 3 and times[-1] - times[0] < spread_ns


def _input_tokens(o: RequestOutcome) -> int:
    """The server's prompt count when it sent one (as the reference does), else the dataset's."""
    return o.server_prompt_tokens if o.server_prompt_tokens is not None else o.prompt_len


def _peak_overlap(intervals: Sequence[tuple[int, int]]) -> int:
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    peak = cur = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        cur += step
        peak = max(peak, cur)
    return peak


def _tpot_ms(o: RequestOutcome, ttft_ns: int | None) -> float | None:
    n = o.output_tokens
    if n > 1 and o.latency_ns is not None and ttft_ns is not None:
        return (o.latency_ns - ttft_ns) / (n - 1) / _MS
    return None


def _chunks_per_s(o: RequestOutcome) -> float | None:
    """Text chunks after the first per second after the first, as a script that counts each
    streamed chunk with text as a "token" prints its tokens/sec (seed 000's: (chunks − 1) /
    (end − first text)); a request whose tokens came without text (text_free) counts its
    choices events. None with fewer than two."""
    n = len(o.itl_ns) + 1 if o.text_free else len(o.chunk_times_ns)
    if n < 2 or o.latency_ns is None or o.ttft_text_ns is None:
        return None
    span = (o.latency_ns - o.ttft_text_ns) / _NS
    return (n - 1) / span if span > 0 else None


def _reference_peaks(ok: Sequence[RequestOutcome]) -> tuple[float | None, int | None]:
    """``max_output_tokens_per_s`` and ``max_concurrent_requests`` exactly as the reference
    buckets them: choices events and active requests per whole second since the first start."""
    if not ok:
        return None, None
    first = min(o.start_ns for o in ok) / _NS
    last = max(o.start_ns / _NS + (o.latency_ns or 0) / _NS for o in ok)
    seconds = int(np.ceil(last - first)) + 1
    events = np.zeros(seconds)
    active = np.zeros(seconds)
    for o in ok:
        start = o.start_ns / _NS
        t = start + (o.ttft_ns or 0) / _NS
        times = [t]
        for gap in o.itl_ns:
            t += gap / _NS
            times.append(t)
        for t in times:
            bucket = int(t - first)
            if 0 <= bucket < seconds:
                events[bucket] += 1
        for s in range(int(start - first), int(start + (o.latency_ns or 0) / _NS - first) + 1):
            active[s] += 1
    return float(np.max(events)), int(np.max(active))


def _per_token_itls(o: RequestOutcome, counts: Sequence[float]) -> list[float]:
    """Each measured gap spread over the tokens that arrived with it (all text chunks of the
    read that ended it); chunks of under one token carry their gap to the next. The tokens
    of the first text's read (chunks that came out of it with the first text) are TTFT's and
    have no gap: none is made up for them."""
    out: list[float] = []
    carry = 0.0
    tokens = 0.0
    gap: float | None = None  # a read's measured gap: every read but the first starts with one
    for k in range(1, len(o.chunk_times_ns)):
        tokens += counts[k] if k < len(counts) else 0.0
        if o.text_gap_measured[k - 1]:
            gap = o.text_gaps_ns[k - 1] / _MS
        if k + 1 < len(o.chunk_times_ns) and not o.text_gap_measured[k]:
            continue  # the read goes on
        if gap is not None and tokens >= 1:
            out.extend([(gap + carry) / tokens] * round(tokens))
            carry = 0.0
        elif gap is not None:
            carry += gap
        tokens = 0.0
    return out


def _figure_bounds(ok: Sequence[RequestOutcome]
                   ) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """Each request's TTFT (vLLM's view and to the first text), TPOT and E2EL with the bounds
    its reads leave them (ms): what the timing block judges ``client_bound`` on. A bound the
    outcome does not carry is the value itself."""
    out: dict[str, tuple[list[float], list[float], list[float]]] = {
        m: ([], [], []) for m in ("ttft", "ttft_text", "tpot", "e2el")}

    def add(metric: str, value: float, lower: float, upper: float) -> None:
        for column, x in zip(out[metric], (value, lower, upper), strict=True):
            column.append(x / _MS)

    for o in ok:
        ttft_lo = o.ttft_ns if o.ttft_lower_ns is None else o.ttft_lower_ns
        lat_lo = o.latency_ns if o.latency_lower_ns is None else o.latency_lower_ns
        if o.ttft_ns is not None and ttft_lo is not None:
            add("ttft", o.ttft_ns, ttft_lo, o.ttft_ns)
        if o.ttft_text_ns is not None:
            text_lo = o.ttft_text_lower_ns
            add("ttft_text", o.ttft_text_ns, o.ttft_text_ns if text_lo is None else text_lo,
                o.ttft_text_ns)
        if o.latency_ns is not None and lat_lo is not None:
            add("e2el", o.latency_ns, lat_lo, o.latency_ns)
            n = o.output_tokens
            if n > 1 and o.ttft_ns is not None and ttft_lo is not None:
                add("tpot", (o.latency_ns - o.ttft_ns) / (n - 1),
                    (lat_lo - o.ttft_ns) / (n - 1), (o.latency_ns - ttft_lo) / (n - 1))
    return out


def timing_of(outcomes: Sequence[RequestOutcome]) -> Timing:
    """The timing self-check over ``outcomes`` (a run's, or one worker's share of it)."""
    ok = [o for o in outcomes if o.success]
    return timing_summary(
        [(o.ttft_text_ns, o.ttft_text_lower_ns, o.ttft_text_exact) for o in ok
         if o.ttft_text_ns is not None and o.ttft_text_lower_ns is not None],
        [o.clock for o in ok], sum(o.clock_stepped for o in outcomes),
        [g for o in ok for g in o.read_lags_ns], sum(o.reads for o in ok),
        sum(o.stamped_reads for o in ok), sum(o.coalesced_gaps for o in ok),
        [g for o in outcomes if (g := o.release_lag_ns) is not None],
        figure_bounds=_figure_bounds(ok))


def summarize(outcomes: Sequence[RequestOutcome], token_counts: Sequence[Sequence[float]], *,
              duration_ns: int, percentiles: Sequence[float],
              goodput: dict[str, float] | None = None, max_concurrency: int | None = None,
              request_rate: float = math.inf) -> RunMetrics:
    """Metrics over ``outcomes`` (in request order); ``token_counts[i]`` are the per-chunk
    token counts of ``outcomes[i]`` (see ``chunk_token_counts``); ``duration_ns`` is the
    reference's duration (load start → last request's end)."""
    ok = [o for o in outcomes if o.success]
    dur_s = duration_ns / _NS

    def per_s(x: float) -> float | None:
        return x / dur_s if dur_s > 0 and ok else None

    by_index = {o.index: c for o, c in zip(outcomes, token_counts, strict=True)}
    tpots = [t for o in ok if (t := _tpot_ms(o, o.ttft_ns)) is not None]
    tpots_text = [t for o in ok if (t := _tpot_ms(o, o.ttft_text_ns)) is not None]
    first_start = min((o.start_ns for o in ok), default=0)
    peak_bucket: dict[int, float] = {}
    per_token: list[float] = []
    chunks = 0
    for o in ok:
        counts = by_index[o.index]
        chunks += len(o.chunk_times_ns)
        per_token.extend(_per_token_itls(o, counts))
        for t, c in zip(o.chunk_times_ns, counts, strict=False):
            bucket = int((t - first_start) // 1_000_000_000)
            peak_bucket[bucket] = peak_bucket.get(bucket, 0.0) + c
    total_in = sum(_input_tokens(o) for o in ok)
    total_out = sum(o.output_tokens for o in ok)
    good = 0
    for o in ok if goodput else ():
        assert goodput is not None
        tpot = _tpot_ms(o, o.ttft_ns) or 0.0
        good += (("ttft" not in goodput or (o.ttft_ns or 0) / _MS <= goodput["ttft"])
                 and ("tpot" not in goodput or tpot <= goodput["tpot"])
                 and ("e2el" not in goodput or (o.latency_ns or 0) / _MS <= goodput["e2el"]))
    max_events, max_active = _reference_peaks(ok)
    server_in = [o.server_prompt_tokens for o in ok if o.server_prompt_tokens is not None]
    sends = [o for o in outcomes if o.start_ns]
    result: dict[str, Any] = {
        "duration": dur_s,
        "completed": len(ok),
        "failed": len(outcomes) - len(ok),
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": per_s(len(ok)),
        "request_goodput": per_s(good) if goodput else None,
        "output_throughput": per_s(total_out),
        "total_token_throughput": per_s(total_in + total_out),
        "max_output_tokens_per_s": max_events,
        "max_concurrent_requests": max_active,
        "rtfx": 0.0,  # audio input seconds per second: no audio here
    }
    result.update(_stats("ttft", [o.ttft_ns / _MS for o in ok if o.ttft_ns is not None],
                         percentiles))
    result.update(_stats("tpot", tpots, percentiles))
    # ours: each request's own decode rate (1000 / its TPOT), then the mean (seed 003's speed)
    rates_per_request = [1000.0 / t for t in tpots if t > 0]
    result["mean_request_decode_rate"] = (float(np.mean(rates_per_request))
                                          if rates_per_request else None)
    result.update(_stats("itl", [g / _MS for o in ok for g in o.itl_ns], percentiles))
    result.update(_stats("e2el", [o.latency_ns / _MS for o in ok if o.latency_ns is not None],
                         percentiles))
    if max_concurrency is not None:
        result.update(_stats("client_queue_time", [o.queue_ns / _MS for o in ok], percentiles))
        if not math.isinf(request_rate):
            result.update(_stats("e2el_including_client_queue",
                                 [((o.latency_ns or 0) + o.queue_ns) / _MS for o in ok],
                                 percentiles))
    # ours, named apart
    scheduled = [t / _MS for o in ok if (t := o.ttft_from_schedule_ns) is not None]
    if scheduled:
        result.update(_stats("ttft_from_schedule", scheduled, percentiles))
    result.update(_stats("ttft_text", [o.ttft_text_ns / _MS for o in ok
                                       if o.ttft_text_ns is not None], percentiles))
    result.update(_stats("tpot_text", tpots_text, percentiles))
    result.update(_stats("itl_text_only", [g / _MS for o in ok for g, m in
                                           zip(o.text_gaps_ns, o.text_gap_measured,
                                               strict=True) if m], percentiles))
    result.update(_stats("itl_per_token", per_token, percentiles))
    result["peak_output_tokens_per_s"] = max(peak_bucket.values(), default=None)
    result["peak_concurrent_requests"] = (
        _peak_overlap([(o.start_ns, o.start_ns + (o.latency_ns or 0)) for o in ok])
        if ok else None)
    result["total_input_tokens_server"] = sum(server_in) if server_in else None
    result["total_input_tokens_dataset"] = sum(o.prompt_len for o in ok)
    result["duration_first_send_ms"] = (
        (max(o.end_ns for o in sends) - min(o.start_ns for o in sends)) / _MS if sends else None)
    result["mean_tokens_per_chunk"] = total_out / chunks if chunks else None
    itls = [g for o in ok for g in o.itl_ns]
    result["max_itl_ms"] = max(itls) / _MS if itls else None
    rates = [r for o in ok if (r := _chunks_per_s(o)) is not None]
    result["median_text_chunks_per_s"] = float(np.median(rates)) if rates else None
    result["mean_text_chunks_per_s"] = float(np.mean(rates)) if rates else None
    result["buffered_streams"] = sum(_buffered(o) for o in ok)
    result["text_free_requests"] = sum(o.text_free for o in ok)
    result["output_tokens_source"] = {
        s: sum(o.output_tokens_source == s for o in ok) for s in ("usage", "tokenizer")}
    result["synthetic"] = any(o.synthetic for o in outcomes)
    result["timing"] = timing_of(outcomes)
    # per-request lists, as the reference writes them (seconds)
    result["input_lens"] = [_input_tokens(o) for o in outcomes]
    result["output_lens"] = [o.output_tokens if o.success else 0 for o in outcomes]
    result["ttfts"] = [o.ttft_ns / _NS if o.ttft_ns is not None else 0.0 for o in outcomes]
    result["itls"] = [[g / _NS for g in o.itl_ns] for o in outcomes]
    result["latencies"] = [o.latency_ns / _NS if o.success and o.latency_ns is not None
                           else 0.0 for o in outcomes]
    result["start_times"] = [o.start_ns / _NS for o in outcomes]
    result["queue_times"] = [o.queue_ns / _NS for o in outcomes]
    result["generated_texts"] = [o.text for o in outcomes]
    result["errors"] = [o.error for o in outcomes]
    return RunMetrics.model_validate(result)
