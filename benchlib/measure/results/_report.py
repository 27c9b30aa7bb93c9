"""The console block, laid out like ``vllm bench serve``'s ``Serving Benchmark Result``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from benchlib.measure.results._result import MeasureResult, percentile_key

__all__ = ["format_result"]

_SECTIONS = (
    ("ttft", "Time to First Token", "TTFT"),
    ("ttft_text", "Time to First Text (benchlib)", "TTFT text"),
    ("ttft_from_schedule", "TTFT from the Schedule (benchlib)", "TTFT sched"),
    ("tpot", "Time per Output Token (excl. 1st token)", "TPOT"),
    ("itl", "Inter-token Latency", "ITL"),
    ("itl_text_only", "ITL between text reads (benchlib)", "ITL text"),
    ("itl_per_token", "Inter-token Latency per token (benchlib)", "ITL/token"),
    ("e2el", "End-to-end Latency", "E2EL"),
    ("client_queue_time", "Client-side Queueing", "Client Queue Time"),
    ("e2el_including_client_queue", "Queue-inclusive End-to-end Latency",
     "E2EL incl. Client Queue"),
)


def _row(label: str, value: Any) -> str:
    if value is None:
        return f"{label:<40} {'n/a':<10}"
    if isinstance(value, float):
        return f"{label:<40} {value:<10.2f}"
    return f"{label:<40} {value!s:<10}"


def _interval_lines(block: Mapping[str, Any]) -> list[str]:
    """Each headline figure with its 95 % interval, and where the interval comes from."""
    lines = ["{s:{c}^{n}}".format(s="95 % intervals (benchlib)", n=50, c="-")]
    lines.append(_row("Interval from:", f"{block['repeats']} repeats (above: the first)"
                      if block["source"] == "repeats" else "requests of one run"))
    for figure, iv in (block.get("figures") or {}).items():
        if iv.get("value") is None:
            text = iv.get("note") or "n/a"
        elif iv.get("low") is None:
            text = f"{iv['value']:.2f} (no interval)"
        else:
            text = f"{iv['value']:.2f} [{iv['low']:.2f}, {iv['high']:.2f}]"
        lines.append(_row(f"{figure}:", text))
    return lines


def _conversation_lines(block: Mapping[str, Any]) -> list[str]:
    """Per turn: median TTFT to text, prompt tokens and the server's cache hits."""
    lines = ["{s:{c}^{n}}".format(s="Conversations (benchlib)", n=50, c="-")]
    lines.append(_row("Sessions:", block["sessions"]))
    for t in block.get("per_turn") or []:
        hit = t.get("prefix_cache_hit_rate")
        ttft = t.get("median_ttft_text_ms")
        lines.append(_row(f"Turn {t['turn']} median TTFT text (ms):",
                          f"{ttft:.2f}" if ttft is not None else "n/a")
                     + (f" cache hits {hit:.0%}" if hit is not None else ""))
    if block.get("prefix_cache_hit_rate") is not None:
        lines.append(_row("Prefix cache hit rate:", f"{block['prefix_cache_hit_rate']:.1%}"))
    return lines


def _timing_lines(timing: Mapping[str, Any]) -> list[str]:
    """The timing self-check: which clock, how exact, and what to do when the client is the
    limit (benchlib's addition)."""
    lines = ["{s:{c}^{n}}".format(s="Timing self-check (benchlib)", n=50, c="-")]
    stamped = timing.get("stamped_read_fraction")
    clock = timing.get("clock")
    if clock == "mixed" and stamped is not None:
        clock = f"mixed ({stamped:.0%} of reads stamped)"
    lines.append(_row("Clock:", clock))
    exact = timing.get("exact_ttft_fraction")
    lines.append(_row("Exact TTFTs:", None if exact is None else f"{exact:.1%}"))
    lines.append(_row("P99 TTFT uncertainty (ms):", timing.get("p99_ttft_uncertainty_ms")))
    lines.append(_row("P99 read lag (ms):", timing.get("p99_read_lag_ms")))
    if timing.get("max_release_lag_ms") is not None:
        lines.append(_row("Max release lag (ms):", timing["max_release_lag_ms"]))
    if timing.get("coalesced_gaps"):
        lines.append(_row("Gaps within one read (not ITL):", timing["coalesced_gaps"]))
    if timing.get("clock_stepped_requests"):
        lines.append(_row("Clock stepped (read times used):", timing["clock_stepped_requests"]))
    if timing.get("client_bound"):
        figures = timing.get("client_bound_figures") or {}
        moved = ", ".join(f"{k} ±{v:.1%}" for k, v in sorted(figures.items(),
                                                            key=lambda kv: -kv[1])[:4])
        limit = timing.get("client_bound_share_limit") or 0.01
        lines.append(f"WARNING: client-bound: reads lagged up to {timing['p99_read_lag_ms']:.2f} "
                     f"ms (p99) behind arrivals, so events merged into one read and their times "
                     f"are bounds, not stamps; within their bounds these figures could move by "
                     f"more than {limit:.0%}: {moved or 'see timing'}. Split the load over more "
                     f"client processes (--workers N, or hosts: --ray-address) or lower "
                     f"--max-concurrency.")
    return lines


def _worker_lines(workers: Mapping[str, Any]) -> list[str]:
    """How the load was split, each worker's own self-check, and the ones that lagged."""
    lines = ["{s:{c}^{n}}".format(s="Workers (benchlib)", n=50, c="-")]
    where = f"{workers['hosts']} host(s)"
    if workers["backend"] == "ray":
        where = f"{workers['nodes']} Ray node(s) on {where}"
    lines.append(_row("Client workers:", f"{workers['count']} {workers['backend']} on {where}"))
    lines.append(_row("Why this many:", workers["chosen"]))
    for w in workers["workers"]:
        t = w["timing"]
        lag = t.get("p99_read_lag_ms")
        exact = t.get("exact_ttft_fraction")
        offset = (f", clock {w['clock_offset_ms']:+.3f} ± "
                  f"{w['clock_offset_uncertainty_ms']:.3f} ms" if workers["backend"] == "ray"
                  else "")
        start = w.get("start_lag_ms")
        lines.append(f"  worker {w['worker']} ({w['host']}): {w['requests']} requests, p99 read "
                     f"lag {'n/a' if lag is None else f'{lag:.2f}'} ms, exact TTFTs "
                     f"{'n/a' if exact is None else f'{exact:.1%}'}"
                     f"{'' if start is None else f', started +{start:.2f} ms'}{offset}")
    if workers.get("late_start_workers"):
        lines.append(f"WARNING: workers {workers['late_start_workers']} started more than "
                     f"{workers['late_start_limit_ms']:g} ms after the common start: their "
                     "arrivals are shifted against the others' (a slow start message or a busy "
                     "host); see each worker's start_lag_ms.")
    if workers["client_bound_workers"]:
        lines.append(f"WARNING: workers {workers['client_bound_workers']} read late "
                     "(client-bound): give the run more workers or hosts.")
    return lines


#: distinct failure causes listed under the block (the rest are counted together)
_MAX_CAUSES = 5


def _failure_lines(errors: Sequence[str]) -> list[str]:
    """Failed requests grouped by cause, most frequent first (benchlib's addition)."""
    causes = Counter(e for e in errors if e)
    if not causes:
        return []
    lines = ["{s:{c}^{n}}".format(s="Failed requests by cause (benchlib)", n=50, c="-")]
    ranked = causes.most_common()
    for cause, count in ranked[:_MAX_CAUSES]:
        lines.append(f"{count:>6} × {cause if len(cause) <= 200 else cause[:197] + '...'}")
    rest = sum(count for _, count in ranked[_MAX_CAUSES:])
    if rest:
        lines.append(f"{rest:>6} × other causes (see the .requests.jsonl)")
    return lines


def format_result(result: MeasureResult | Mapping[str, Any], percentiles: Sequence[float]
                  ) -> str:
    """The block as text, from a result or its JSON object (a saved result file). Rows and
    labels follow the reference; benchlib's extra rows are marked so nobody mistakes them
    for reference numbers. Failures are listed by cause, and output tokens counted by the
    tokenizer (the server sent no usage) are said to be."""
    if isinstance(result, MeasureResult):
        result = result.to_json()
    lines = ["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="=")]
    lines.append(_row("Successful requests:", result["completed"]))
    lines.append(_row("Failed requests:", result["failed"]))
    if result.get("max_concurrency") is not None:
        lines.append(_row("Maximum request concurrency:", result["max_concurrency"]))
    if result.get("request_rate") not in (None, "inf", float("inf")):
        lines.append(_row("Request rate configured (RPS):", float(result["request_rate"])))
    lines.append(_row("Benchmark duration (s):", result["duration"]))
    lines.append(_row("Total input tokens:", result["total_input_tokens"]))
    lines.append(_row("Total generated tokens:", result["total_output_tokens"]))
    lines.append(_row("Request throughput (req/s):", result["request_throughput"]))
    if result.get("request_goodput") is not None:
        lines.append(_row("Request goodput (req/s):", result["request_goodput"]))
    lines.append(_row("Output token throughput (tok/s):", result["output_throughput"]))
    lines.append(_row("Peak output token throughput (tok/s):",
                      result["max_output_tokens_per_s"]))
    lines.append(_row("Peak concurrent requests:", result["max_concurrent_requests"]))
    lines.append(_row("Total token throughput (tok/s):", result["total_token_throughput"]))
    if "peak_output_tokens_per_s" in result:
        lines.append(_row("Peak output tokens/s, tokens (benchlib):",
                          result["peak_output_tokens_per_s"]))
        lines.append(_row("Peak overlapping requests (benchlib):",
                          result["peak_concurrent_requests"]))
    lines.append(_row("Mean tokens per chunk (benchlib):", result["mean_tokens_per_chunk"]))
    if result.get("median_text_chunks_per_s") is not None:
        lines.append(_row("Median text chunks/s per request (benchlib):",
                          result["median_text_chunks_per_s"]))
    if result.get("max_itl_ms") is not None:
        lines.append(_row("Max ITL (ms) (benchlib):", result["max_itl_ms"]))
    sources = result.get("output_tokens_source") or {}
    if sources.get("tokenizer"):
        lines.append(_row("Output tokens by tokenizer (no usage):",
                          f"{sources['tokenizer']} of {result['completed']} requests"))
    if result.get("text_free_requests"):
        lines.append(_row("Tokens without text (events timed):",
                          f"{result['text_free_requests']} of {result['completed']}: the "
                          "tokenizer rendered none of their ids"))
    if result.get("buffered_streams"):
        lines.append(_row("Buffered streams (all chunks in 1 ms):",
                          f"{result['buffered_streams']} of {result['completed']}: their "
                          "TPOT is not decode speed"))
    for key, title, short in _SECTIONS:
        if f"mean_{key}_ms" not in result:
            continue
        lines.append("{s:{c}^{n}}".format(s=title, n=50, c="-"))
        lines.append(_row(f"Mean {short} (ms):", result[f"mean_{key}_ms"]))
        lines.append(_row(f"Median {short} (ms):", result[f"median_{key}_ms"]))
        for p in percentiles:
            label = percentile_key(p).upper()
            lines.append(_row(f"{label} {short} (ms):", result[f"{percentile_key(p)}_{key}_ms"]))
    if result.get("intervals"):
        lines.extend(_interval_lines(result["intervals"]))
    if result.get("conversations"):
        lines.extend(_conversation_lines(result["conversations"]))
    if result.get("timing"):
        lines.extend(_timing_lines(result["timing"]))
    if result.get("workers"):
        lines.extend(_worker_lines(result["workers"]))
    lines.extend(_failure_lines(result.get("errors") or ()))
    if result.get("synthetic"):
        lines.append("SYNTHETIC: benchlib's scripted server answered (canned timings): these "
                     "figures test the kit, they measure no engine.")
    lines.append("=" * 50)
    return "\n".join(lines)
