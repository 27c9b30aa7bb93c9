"""Timing bounds: does every TTFT's error bar hold the wire truth, and does a run say when the
client limited its accuracy?

Three scenarios against the scripted server (its own process, sharing the CPUs), side by
side in one run:

* one stream (TTFT 25 ms, a chunk every 8 ms): every TTFT should be an exact kernel stamp;
* 256 streams with 8 ms between chunks: busy, but within what one process reads;
* 1,024 streams with 2 ms between chunks: more chunks per second than one process reads
  promptly, so events merge into one read and their stamps become upper bounds.

For each: the fraction of exact TTFTs, the median TTFT error (upper bound − truth), the
fraction of requests whose truth lies inside [``ttft_lower_ms``, ``ttft_ms``] (each end
widened by 0.2 ms: the truth is when the server's ``send`` returned), the fraction whose
bounds meet the interval the server's ``send`` ran in (the bytes reached the client's socket
inside it; 10 µs of slack), the p99 point error
and the p99 bound width, the p99 read lag and ``client_bound``.

Run: ``.venv/bin/python benchmarks/timing_bounds.py`` (about 30 s). Writes
``benchmarks/results/timing_bounds-<UTC time>.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib.measure import read_requests, requests_path

REPO = Path(__file__).resolve().parents[1]
SLACK_MS = 0.2
#: (name, streams, prompts, TTFT ms, ITL ms, output tokens)
SCENARIOS = (("1 stream, 8 ms gaps", 1, 200, 25.0, 8.0, 16),
             ("256 streams, 8 ms gaps", 256, 1024, 50.0, 8.0, 24),
             ("1,024 streams, 2 ms gaps", 1024, 2048, 100.0, 2.0, 24))


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))


def run_scenario(work: Path, tokenizer: Path, streams: int, prompts: int, ttft_ms: float,
                 itl_ms: float, output_tokens: int, server_args: Sequence[str] = (),
                 measure_args: Sequence[str] = ()) -> dict[str, Any]:
    """Start a server, measure, and hold every request against the server's truth
    (``server_args`` / ``measure_args``: more flags for either)."""
    work.mkdir(parents=True, exist_ok=True)
    truth = work / "truth.jsonl"
    server = subprocess.Popen(
        [sys.executable, "-m", "benchlib", "scripted-server", "--port", "0", "--truth",
         str(truth), "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms), *server_args],
        stdout=subprocess.PIPE, text=True, cwd=REPO, preexec_fn=_raise_nofile)
    assert server.stdout is not None
    url = server.stdout.readline().split()[-1]
    out = work / "benchlib.json"
    try:
        subprocess.run(
            [sys.executable, "-m", "benchlib", "measure", "--base-url", url, "--model",
             "scripted", "--tokenizer", str(tokenizer), "--input-len", "16", "--output-len",
             str(output_tokens), "--num-prompts", str(prompts), "--max-concurrency",
             str(streams), "--num-warmups", "2", "--result-json", str(out), "--disable-tqdm",
             *measure_args],
            check=True, capture_output=True, cwd=REPO, preexec_fn=_raise_nofile)
    finally:
        server.terminate()
        server.wait(timeout=30)
    result = json.loads(out.read_text())
    rows = {t["id"]: t for t in map(json.loads, truth.read_text().splitlines())}
    errors, widths, inside, consistent = [], [], 0, 0
    records = [r for r in read_requests(requests_path(out)) if r.success]
    for r in records:
        upper, lower = r.ttft_ms, r.ttft_lower_ms
        assert upper is not None and lower is not None  # a success has its first text
        t = rows[r.response_id]
        true_ttft = (t["content_writes_ns"][0] - t["arrival_ns"]) / 1e6
        errors.append(upper - true_ttft)
        widths.append(upper - lower)
        inside += lower - SLACK_MS <= true_ttft <= upper + SLACK_MS
        # the bytes reached the client while the server's send ran: [begin, end]
        begin = (t["content_send_begin_ns"][0] - t["arrival_ns"]) / 1e6
        consistent += lower <= true_ttft + 0.01 and begin - 0.01 <= upper
    timing = result["timing"]
    return {"workers": result.get("workers"), "completed": result["completed"],
            "failed": result["failed"],
            "exact_ttft_fraction": timing["exact_ttft_fraction"],
            "median_ttft_error_ms": statistics.median(errors),
            "p99_ttft_error_ms": float(np.percentile(errors, 99)),
            "truth_inside_bounds": inside / len(records),
            "bounds_meet_send_interval": consistent / len(records),
            "p99_ttft_uncertainty_ms": timing["p99_ttft_uncertainty_ms"],
            "p99_read_lag_ms": timing["p99_read_lag_ms"],
            "client_bound": timing["client_bound"],
            "coalesced_gaps": timing["coalesced_gaps"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", type=Path, default=REPO / ".models" / "tiny-llama")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args(argv)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work = args.out / f"timing_bounds-{stamp}"
    rows = []
    for k, (name, streams, prompts, ttft, itl, tokens) in enumerate(SCENARIOS):
        row = {"scenario": name, **run_scenario(work / str(k), args.tokenizer, streams,
                                                prompts, ttft, itl, tokens)}
        rows.append(row)
    (work / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(f"{'scenario':<26}{'exact':>8}{'med err':>10}{'p99 err':>10}{'inside':>9}{'meets':>8}"
          f"{'p99 width':>11}{'p99 lag':>10}  client_bound")
    for r in rows:
        print(f"{r['scenario']:<26}{r['exact_ttft_fraction']:>8.3f}"
              f"{r['median_ttft_error_ms']:>+10.3f}{r['p99_ttft_error_ms']:>+10.2f}"
              f"{r['truth_inside_bounds']:>9.4f}{r['bounds_meet_send_interval']:>8.4f}"
              f"{r['p99_ttft_uncertainty_ms']:>11.2f}"
              f"{r['p99_read_lag_ms']:>10.2f}  {r['client_bound']}")
    print(f"raw files: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
