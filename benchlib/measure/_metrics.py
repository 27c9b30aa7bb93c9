"""Aggregate metrics with ``vllm bench serve``'s definitions and JSON keys, plus ours.

Reference behaviour kept on purpose (so numbers compare): numpy mean / median / std (ddof=0) /
linear-interpolation percentiles over successful requests; TPOT = (E2EL − TTFT)/(N − 1) only
when N > 1; ITL one value per chunk; goodput counts requests meeting every SLO (TPOT 0 when
N ≤ 1). Corrected where the reference is wrong:

* ``max_output_tokens_per_s`` buckets *tokens* (each chunk's share) per second, not chunks;
* ``max_concurrent_requests`` is the true peak overlap of in-flight requests, which cannot
  exceed ``--max-concurrency``, instead of requests touching the same 1-s bucket;
* ``duration`` runs from the first request's send to the last request's end on the wire.

Ours on top: per-token ITL (each chunk's gap spread over the tokens it carried), mean tokens
per chunk (≈ speculative acceptance length), where token counts and times came from, and
``buffered_streams``: requests whose chunks all arrived within 1 ms (a buffering server or
proxy, or a starved API process), whose TPOT cannot be read as decode speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from benchlib.measure._request import RequestOutcome

__all__ = ["percentile_key", "summarize"]

_NS = 1e9
_MS = 1e6


def percentile_key(p: float) -> str:
    """``99`` → ``p99``, ``99.9`` → ``p99.9`` (the reference's key spelling)."""
    return f"p{int(p)}" if float(p).is_integer() else f"p{p}"


def _stats(name: str, values_ms: Sequence[float], percentiles: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values_ms, dtype=np.float64) if len(values_ms) else np.zeros(1)
    out = {
        f"mean_{name}_ms": float(np.mean(arr)),
        f"median_{name}_ms": float(np.median(arr)),
        f"std_{name}_ms": float(np.std(arr)),
    }
    for p in percentiles:
        out[f"{percentile_key(p)}_{name}_ms"] = float(np.percentile(arr, p))
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


def summarize(outcomes: Sequence[RequestOutcome], token_counts: Sequence[Sequence[float]], *,
              duration_ns: int, percentiles: Sequence[float],
              goodput: dict[str, float] | None = None) -> dict[str, Any]:
    """Metrics over ``outcomes`` (in request order); ``token_counts[i]`` are the per-chunk
    token counts of ``outcomes[i]`` (see ``chunk_token_counts``)."""
    ok = [o for o in outcomes if o.success]
    dur_s = duration_ns / _NS

    def per_s(x: float) -> float:
        return x / dur_s if dur_s > 0 else 0.0

    ttfts = [o.ttft_ns / _MS for o in ok if o.ttft_ns is not None]
    e2els = [o.latency_ns / _MS for o in ok if o.latency_ns is not None]
    itls = [g / _MS for o in ok for g in o.itl_ns]
    tpots: list[float] = []
    all_tpots: list[float] = []
    per_token_itls: list[float] = []
    chunks = 0
    first_start = min((o.start_ns for o in outcomes), default=0)
    peak_bucket: dict[int, float] = {}
    by_index = {o.index: c for o, c in zip(outcomes, token_counts, strict=True)}
    for o in ok:
        n = o.output_tokens
        tpot = 0.0
        if n > 1 and o.latency_ns is not None and o.ttft_ns is not None:
            tpot = (o.latency_ns - o.ttft_ns) / (n - 1) / _MS
            tpots.append(tpot)
        all_tpots.append(tpot)
        counts = by_index[o.index]
        chunks += len(o.chunk_times_ns)
        carry = 0.0
        for k, gap in enumerate(o.itl_ns, start=1):
            carry_gap = gap / _MS
            tokens = counts[k] if k < len(counts) else 0.0
            if tokens >= 1:
                per_token_itls.extend([(carry_gap + carry) / tokens] * round(tokens))
                carry = 0.0
            else:
                carry += carry_gap
        for t, c in zip(o.chunk_times_ns, counts, strict=False):
            bucket = int((t - first_start) // 1_000_000_000)
            peak_bucket[bucket] = peak_bucket.get(bucket, 0.0) + c
    total_in = sum(_input_tokens(o) for o in ok)
    total_out = sum(o.output_tokens for o in ok)
    good = 0
    if goodput:
        for o, tpot in zip(ok, all_tpots, strict=True):
            meets = True
            if "ttft" in goodput and (o.ttft_ns or 0) / _MS > goodput["ttft"]:
                meets = False
            if "tpot" in goodput and tpot > goodput["tpot"]:
                meets = False
            if "e2el" in goodput and (o.latency_ns or 0) / _MS > goodput["e2el"]:
                meets = False
            good += meets
    sources = {s: sum(o.output_tokens_source == s for o in ok) for s in ("usage", "tokenizer")}
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
        "max_output_tokens_per_s": max(peak_bucket.values(), default=0.0),
        "max_concurrent_requests": _peak_overlap(
            [(o.start_ns, o.start_ns + (o.latency_ns or 0)) for o in ok]),
    }
    for name, values in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2el", e2els)):
        result.update(_stats(name, values, percentiles))
    result.update(_stats("itl_per_token", per_token_itls, percentiles))
    result["mean_tokens_per_chunk"] = total_out / chunks if chunks else 0.0
    result["buffered_streams"] = sum(_buffered(o) for o in ok)
    result["output_tokens_source"] = sources
    result["input_lens"] = [_input_tokens(o) for o in outcomes]
    result["output_lens"] = [o.output_tokens if o.success else 0 for o in outcomes]
    result["ttfts"] = [o.ttft_ns / _NS if o.success and o.ttft_ns else 0.0 for o in outcomes]
    result["itls"] = [[g / _NS for g in o.itl_ns] if o.success else [] for o in outcomes]
    result["errors"] = [o.error for o in outcomes]
    return result
