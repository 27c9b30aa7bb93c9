"""Synthetic request outcomes for the metric and record tests: known times, no server."""

from __future__ import annotations

import itertools

from benchlib.measure import RequestOutcome

MS = 1_000_000


def outcome(i: int, start_ms: float, ttft_ms: float, gaps_ms: list[float], tokens: int,
            ok: bool = True, role_ms: float | None = None,
            same_read: set[int] | None = None) -> RequestOutcome:
    """A successful request whose text chunks arrive at ``ttft_ms`` then ``gaps_ms`` apart;
    ``role_ms``: a role-only choices event before the text; ``same_read``: text gap indexes
    whose two chunks came out of one read."""
    start = int(start_ms * MS)
    times = [start + int(ttft_ms * MS)]
    for g in gaps_ms:
        times.append(times[-1] + int(g * MS))
    o = RequestOutcome(index=i, prompt_len=10, start_ns=start, success=ok,
                       error="" if ok else "HTTP 500: x")
    if ok:
        choice_times = ([start + int(role_ms * MS)] if role_ms is not None else []) + times
        o.ttft_ns = choice_times[0] - start
        o.itl_ns = [b - a for a, b in itertools.pairwise(choice_times)]
        o.ttft_text_ns = o.ttft_text_lower_ns = int(ttft_ms * MS)
        o.ttft_text_exact = True
        o.text_gaps_ns = [int(g * MS) for g in gaps_ms]
        same = same_read or set()
        o.text_gap_measured = [k not in same for k in range(len(gaps_ms))]
        reads = [0]
        for k in range(len(gaps_ms)):
            reads.append(reads[-1] + (k not in same))
        o.chunk_reads = reads
        o.latency_ns = times[-1] - start
        o.end_ns = times[-1]
        o.chunk_times_ns = times
        o.chunk_texts = ["x"] * len(times)
        o.output_tokens = tokens
        o.output_tokens_source = "usage"
    return o


def sample_run() -> tuple[list[RequestOutcome], list[list[float]]]:
    """A small run with every kind of request: role chunk, coalesced read, inexact TTFT,
    tokenizer-counted output, server prompt counts, queueing, a failure and an unsent one."""
    a = outcome(0, 5, 10, [5, 5, 5], 12, role_ms=2)
    a.release_ns, a.server_prompt_tokens, a.response_id = 1 * MS, 11, "cmpl-a"
    a.http_status, a.finish_reason, a.clock, a.reads, a.stamped_reads = (
        200, "length", "kernel", 4, 4)
    a.read_lags_ns = [20_000, 30_000, 40_000, 50_000]
    a.text, a.reasoning, a.tool_text = "xx", "x", "x"
    b = outcome(1, 7, 20, [10, 0, 4], 4, same_read={1})
    b.release_ns, b.ttft_text_lower_ns, b.ttft_text_exact = 2 * MS, 19 * MS, False
    b.output_tokens_source, b.clock, b.clock_stepped = "tokenizer", "userspace", True
    b.text, b.reads = "xxxx", 3
    c = outcome(2, 9, 0, [], 0, ok=False)
    c.http_status, c.release_ns, c.end_ns = 500, 3 * MS, 12 * MS
    # due on the schedule: a released 0.5 ms late, b and c on time (d: never released)
    a.due_ns, b.due_ns, c.due_ns = MS // 2, 2 * MS, 3 * MS
    d = outcome(3, 0, 0, [], 0, ok=False)
    d.start_ns, d.error = 0, "cannot connect to 127.0.0.1:9: Connection refused"
    counts = [[3.0] * 4, [1.0, 1.5, 1.5, 0.0], [], []]
    return [a, b, c, d], counts
