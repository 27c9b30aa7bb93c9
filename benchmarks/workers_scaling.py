"""Worker scaling: how many streams one client process reads accurately, and what N worker
processes buy at 1,024 streams.

Against the scripted server with the issue's timing (first chunk 80 ms after the request
arrives, then one 3-token chunk every 10 ms; its own process, sharing the CPUs), with the
wire truth of every request (when the server's ``send`` of the first text chunk returned):

* the capacity ladder: one process at 64, 128, 256 and 512 streams — the largest that keeps
  the p99 TTFT error within 2 ms is ``STREAMS_PER_WORKER``, the default's measure
  (:mod:`benchlib.measure.load._split`);
* the scaling: 1,024 streams from 1, 2 and 4 worker processes and from the default.

Per row: the median and p99 TTFT error (upper bound − truth), the exact-TTFT fraction, the
largest per-worker p99 read lag and which workers were client-bound, and the CPU the client
and the server each used (seconds of CPU per second of wall time, from ``/proc``): on the
2-core machine the two together are bounded by 2.0, which bounds what more workers can buy.

Run: ``.venv/bin/python benchmarks/workers_scaling.py`` (about 3 min; ``--quick``: the
1,024-stream rows only). Writes ``benchmarks/results/workers_scaling-<UTC time>/`` and prints
a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing_bounds import run_scenario

REPO = Path(__file__).resolve().parents[1]
TTFT_MS, ITL_MS, TOKENS_PER_CHUNK, OUTPUT_TOKENS = 80.0, 10.0, 3, 48
#: (streams, prompts, workers flag: a number, or None for the default)
LADDER = ((64, 256, 1), (128, 512, 1), (256, 1024, 1), (512, 1024, 1))
SCALING = ((1024, 2048, 1), (1024, 2048, 2), (1024, 2048, 4), (1024, 2048, None))


class CpuMeter:
    """CPU seconds used by the processes whose command line holds a marker, sampled from
    ``/proc`` every 50 ms while a run goes on (children that come and go included)."""

    def __init__(self, markers: Sequence[str]) -> None:
        self._markers = markers
        self._seen: dict[tuple[str, int], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._tick = os.sysconf("SC_CLK_TCK")

    def _sample(self) -> None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            for m in self._markers:
                if m in cmd:
                    self._seen[(m, int(pid))] = (int(fields[11]) + int(fields[12])) / self._tick

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            self._sample()

    def __enter__(self) -> CpuMeter:
        self._t0 = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.wall = time.perf_counter() - self._t0

    def per_wall(self, marker: str) -> float:
        return sum(v for (m, _), v in self._seen.items() if m == marker) / self.wall


def _row(work: Path, tokenizer: Path, streams: int, prompts: int, workers: int | None
         ) -> dict[str, Any]:
    flags = ["--workers", str(workers)] if workers is not None else []
    with CpuMeter(["benchlib scripted-server", "benchlib measure", "multiprocessing"]) as cpu:
        got = run_scenario(work, tokenizer, streams, prompts, TTFT_MS, ITL_MS, OUTPUT_TOKENS,
                           ["--tokens-per-chunk", str(TOKENS_PER_CHUNK)], flags)
    split = got.pop("workers")
    lags = ([w["timing"]["p99_read_lag_ms"] for w in split["workers"]] if split
            else [got["p99_read_lag_ms"]])
    return {"streams": streams, "prompts": prompts,
            "workers": split["count"] if split else 1,
            "workers_flag": "default" if workers is None else str(workers),
            "max_worker_p99_read_lag_ms": max(lag for lag in lags if lag is not None),
            "client_bound_workers": (split["client_bound_workers"] if split
                                     else ([0] if got["client_bound"] else [])),
            "client_cpu": cpu.per_wall("benchlib measure") + cpu.per_wall("multiprocessing"),
            "server_cpu": cpu.per_wall("benchlib scripted-server"), **got}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", type=Path, default=REPO / ".models" / "tiny-llama")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    ap.add_argument("--quick", action="store_true", help="the 1,024-stream rows only")
    args = ap.parse_args(argv)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work = args.out / f"workers_scaling-{stamp}"
    rows = []
    for k, (streams, prompts, workers) in enumerate((() if args.quick else LADDER) + SCALING):
        row = _row(work / str(k), args.tokenizer, streams, prompts, workers)
        rows.append(row)
        print(f"{streams:>6} streams, {row['workers']} worker(s): p99 TTFT error "
              f"{row['p99_ttft_error_ms']:+.2f} ms", flush=True)
    (work / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(f"{'streams':>8}{'workers':>9}{'med err':>10}{'p99 err':>10}{'exact':>8}"
          f"{'p99 lag':>10}{'client cpu':>12}{'server cpu':>12}  client-bound")
    for r in rows:
        print(f"{r['streams']:>8}{r['workers']:>5} ({r['workers_flag'][:1]})"
              f"{r['median_ttft_error_ms']:>+10.3f}{r['p99_ttft_error_ms']:>+10.2f}"
              f"{r['exact_ttft_fraction']:>8.3f}{r['max_worker_p99_read_lag_ms']:>10.2f}"
              f"{r['client_cpu']:>12.2f}{r['server_cpu']:>12.2f}  {r['client_bound_workers']}")
    print(f"raw files: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
