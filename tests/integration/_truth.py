"""Compare a measured run with the scripted server's truth file, request by request."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from benchlib.measure import read_requests


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def errors_vs_truth(requests_jsonl: Path, truth_jsonl: Path) -> dict[str, float]:
    """Median measured-minus-true TTFT and TPOT (ms) over requests matched by response id."""
    truth = {t["id"]: t for t in load_jsonl(truth_jsonl)}
    ttft_err, tpot_err, true_ttft = [], [], []
    for r in read_requests(requests_jsonl):
        t = truth[r.response_id]
        writes = t["content_writes_ns"]
        tt = (writes[0] - t["arrival_ns"]) / 1e6
        te2e = (writes[-1] - t["arrival_ns"]) / 1e6
        true_ttft.append(tt)
        ttft_err.append(r.ttft_ms - tt)
        n = t["completion_tokens"]
        if n > 1:
            tpot_err.append(r.tpot_ms - (te2e - tt) / (n - 1))
    return {"ttft": statistics.median(ttft_err), "tpot": statistics.median(tpot_err),
            "true_ttft": statistics.median(true_ttft)}


def bracket_coverage(requests_jsonl: Path, truth_jsonl: Path, slack_ms: float = 0.2) -> float:
    """Fraction of successful requests whose client bounds [ttft_lower_ms, ttft_ms] meet the
    server's truth, each end widened by ``slack_ms``.

    The true arrival lies between the first content ``send``'s start and its return (the
    server's own stamps): a server descheduled after the copy moves the return, not the
    arrival, so the truth is that interval and the check is that the two intervals meet."""
    truth = {t["id"]: t for t in load_jsonl(truth_jsonl)}
    inside = total = 0
    for r in read_requests(requests_jsonl):
        if not r.success or r.ttft_ms is None or r.ttft_lower_ms is None:
            continue
        t = truth[r.response_id]
        sent_end = (t["content_writes_ns"][0] - t["arrival_ns"]) / 1e6
        begins = t.get("content_send_begin_ns") or t["content_writes_ns"]
        sent_begin = (begins[0] - t["arrival_ns"]) / 1e6
        total += 1
        inside += r.ttft_lower_ms - slack_ms <= sent_end and sent_begin <= r.ttft_ms + slack_ms
    return inside / total if total else 0.0
