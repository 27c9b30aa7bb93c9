"""Client capacity: streamed chunks per second a tool ingests while its TTFT stays true.

A benchmark client that falls behind the stream it reads reports late arrivals: its TTFT
grows with the load it is under, not with the server's. This benchmark finds, for benchlib
and for ``vllm bench serve`` side by side, the heaviest stream each can ingest while its
median TTFT stays within 1 ms of the truth.

The scripted server (its own process, sharing this machine's cores with the client) sends
fixed-length completions: first chunk ``TTFT_MS`` after a request's bytes arrive, then one
chunk every ITL. Its truth file holds when each request arrived (kernel stamp) and when each
chunk's ``send`` returned. The load climbs a ladder of steps (concurrency up, then ITL down);
at each step every tool runs the same workload against a fresh server, and

* chunks/s ingested = content chunks the server sent ÷ (last chunk sent − first request
  arrived), from the truth file: what really flowed through the client, which is less than
  offered when the server itself is the bottleneck;
* TTFT error = the tool's reported median TTFT − the truth's median TTFT (the same rule as
  ``benchmarks/wire_accuracy.py``).

A tool climbs until its error exceeds 1 ms, or a request fails; its capacity is the chunks/s
of its last good step ("< first step" when even the first step fails).

Run: ``.venv/bin/python benchmarks/client_capacity.py`` (needs ``make engine`` for
``vllm bench serve``; without it only benchlib runs). ``--quick`` climbs a shorter ladder.
Writes ``benchmarks/results/client_capacity-<UTC time>/summary.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib.measure import read_requests, requests_path
from benchmarks._peers import PeerResult, PeerRunError, run_vllm_bench, vllm_python

REPO = Path(__file__).resolve().parents[1]
TTFT_MS, OUTPUT_TOKENS, INPUT_LEN = 50.0, 32, 32
ERROR_LIMIT_MS = 1.0
#: (concurrency, ITL ms): offered chunks/s = concurrency × 1000 / ITL, rising step by step
LADDER: list[tuple[int, float]] = [
    (1, 20.0), (2, 10.0), (4, 10.0), (8, 10.0), (16, 10.0), (64, 10.0), (128, 10.0),
    (256, 10.0), (512, 10.0), (1024, 10.0), (1024, 8.0), (1024, 6.5), (1024, 5.0),
    (1024, 2.0),
]
QUICK_LADDER: list[tuple[int, float]] = [(1, 20.0), (16, 10.0), (128, 10.0), (1024, 10.0)]

Runner = Callable[..., PeerResult]


def start_server(truth: Path, itl_ms: float) -> tuple[subprocess.Popen[str], str]:
    """A fresh scripted server writing ``truth``; returns the process and its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlib", "scripted-server", "--port", "0", "--truth",
         str(truth), "--ttft-ms", str(TTFT_MS), "--itl-ms", str(itl_ms), "--output-tokens",
         str(OUTPUT_TOKENS), "--model", "scripted"],
        stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split()[-1]


def truth_stats(truth: Path) -> dict[str, float]:
    """Median true TTFT (ms), content chunks sent, and chunks/s over the step."""
    rows = [json.loads(line) for line in truth.read_text().splitlines() if line.strip()]
    ttft = [(r["content_writes_ns"][0] - r["arrival_ns"]) / 1e6 for r in rows]
    chunks = sum(len(r["content_writes_ns"]) for r in rows)
    span_s = (max(r["content_writes_ns"][-1] for r in rows)
              - min(r["arrival_ns"] for r in rows)) / 1e9
    return {"median_ttft_ms": statistics.median(ttft), "chunks": chunks,
            "chunks_per_s": chunks / span_s if span_s > 0 else 0.0, "requests": len(rows)}


def p99_request_error(requests_jsonl: Path, truth: Path) -> float:
    """99th percentile of |measured − true| TTFT over requests matched by response id."""
    rows = {r["id"]: r for r in map(json.loads, truth.read_text().splitlines())}
    errors = []
    for rec in read_requests(requests_jsonl):
        if rec.success and rec.ttft_ms is not None:
            row = rows[rec.response_id]
            true_ttft = (row["content_writes_ns"][0] - row["arrival_ns"]) / 1e6
            errors.append(abs(rec.ttft_ms - true_ttft))
    errors.sort()
    return errors[min(len(errors) - 1, int(0.99 * len(errors)))] if errors else 0.0


def run_benchlib(url: str, model: str, tokenizer: Path, *, output_len: int, num_prompts: int,
                 max_concurrency: int, workdir: Path, **_: Any) -> PeerResult:
    """``benchlib measure`` as a user runs it (its own process), result read from its JSON."""
    out = workdir / "benchlib.json"
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "benchlib", "measure", "--base-url", url, "--model", model,
         "--tokenizer", str(tokenizer), "--input-len", str(INPUT_LEN), "--output-len",
         str(output_len), "--num-prompts", str(num_prompts), "--max-concurrency",
         str(max_concurrency), "--result-json", str(out), "--disable-tqdm"],
        capture_output=True, text=True, cwd=REPO)
    (workdir / "benchlib.stderr.log").write_text(proc.stderr)
    if proc.returncode != 0 or not out.exists():
        raise PeerRunError("benchlib", f"exited with code {proc.returncode}",
                           proc.stderr[-2000:])
    r = json.loads(out.read_text())
    return PeerResult(tool="benchlib", median_ttft_ms=r["median_ttft_ms"],
                      mean_ttft_ms=r["mean_ttft_ms"], median_tpot_ms=r["median_tpot_ms"],
                      mean_tpot_ms=r["mean_tpot_ms"], total_output_tokens=r["total_output_tokens"],
                      completed=r["completed"], raw_path=out)


def step(tool: str, runner: Runner, conc: int, itl_ms: float, tokenizer: Path, work: Path
         ) -> dict[str, Any]:
    """One tool at one step, against a fresh server: its error and what flowed."""
    n = max(32, 2 * conc)
    name = f"{tool.replace(' ', '_')}-c{conc}-itl{itl_ms:g}"
    truth = work / f"truth-{name}.jsonl"
    proc, url = start_server(truth, itl_ms)
    row: dict[str, Any] = {"tool": tool, "concurrency": conc, "itl_ms": itl_ms,
                           "requests": n, "offered_chunks_per_s": conc * 1000.0 / itl_ms}
    try:
        res = runner(url, "scripted", tokenizer, endpoint="completions", input_len=INPUT_LEN,
                     output_len=OUTPUT_TOKENS, num_prompts=n, max_concurrency=conc, seed=0,
                     workdir=work / name)
    except PeerRunError as exc:
        row.update(ok=False, failure=str(exc).splitlines()[0])
        return row
    finally:
        proc.terminate()
        proc.wait()
    t = truth_stats(truth)
    error = res.median_ttft_ms - t["median_ttft_ms"]
    row.update(completed=res.completed, median_ttft_ms=res.median_ttft_ms,
               true_median_ttft_ms=t["median_ttft_ms"], ttft_error_ms=error,
               chunks_per_s=t["chunks_per_s"], chunks=t["chunks"])
    if tool == "benchlib":  # response ids match requests to truth rows: the error's tail
        row["p99_abs_request_ttft_error_ms"] = p99_request_error(
            requests_path(res.raw_path), truth)
    row["ok"] = res.completed == n and abs(error) < ERROR_LIMIT_MS
    if res.completed != n:
        row["failure"] = f"{n - res.completed} of {n} requests failed"
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", type=Path, default=REPO / ".models" / "tiny-llama")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    ap.add_argument("--quick", action="store_true", help="a shorter ladder")
    ap.add_argument("--tools", nargs="+", default=["benchlib", "vllm bench serve"],
                    choices=["benchlib", "vllm bench serve"])
    args = ap.parse_args(argv)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work = args.out / f"client_capacity-{stamp}"
    work.mkdir(parents=True, exist_ok=True)
    runners: dict[str, Runner] = {"benchlib": run_benchlib, "vllm bench serve": run_vllm_bench}
    tools = [t for t in args.tools if t != "vllm bench serve" or vllm_python().exists()]
    ladder = QUICK_LADDER if args.quick else LADDER
    rows: list[dict[str, Any]] = []
    capacity: dict[str, dict[str, Any]] = {}
    for tool in tools:
        last_good: dict[str, Any] | None = None
        for conc, itl in ladder:
            row = step(tool, runners[tool], conc, itl, args.tokenizer, work)
            rows.append(row)
            err = row.get("ttft_error_ms")
            p99 = row.get("p99_abs_request_ttft_error_ms")
            print(f"{tool:<18} c={conc:<5} itl={itl:<5g} "
                  f"{'error ' + format(err, '+.3f') + ' ms' if err is not None else '':<18}"
                  f"{'p99 |err| ' + format(p99, '.2f') + ' ms' if p99 is not None else '':<20}"
                  f"{row.get('chunks_per_s', 0):>10.0f} chunks/s  "
                  f"{'ok' if row['ok'] else 'OVER: ' + row.get('failure', '|error| >= 1 ms')}",
                  flush=True)
            if not row["ok"]:
                break
            last_good = row
        capacity[tool] = ({"chunks_per_s": last_good["chunks_per_s"],
                           "concurrency": last_good["concurrency"],
                           "itl_ms": last_good["itl_ms"],
                           "ttft_error_ms": last_good["ttft_error_ms"],
                           "top_of_ladder": (conc, itl) == ladder[-1] and bool(row["ok"])}
                          if last_good is not None else {"chunks_per_s": None})
    print(f"\nscripted server: TTFT {TTFT_MS:g} ms, {OUTPUT_TOKENS} chunks of 1 token, "
          f"completions; capacity = chunks/s at the last step with |median TTFT error| < "
          f"{ERROR_LIMIT_MS:g} ms")
    for tool, cap in capacity.items():
        if cap["chunks_per_s"] is None:
            print(f"{tool:<18} < first step ({ladder[0][0]} stream, ITL {ladder[0][1]:g} ms)")
        else:
            top = (" (even the top step: the limit lies beyond the ladder)"
                   if cap["top_of_ladder"] else "")
            print(f"{tool:<18} {cap['chunks_per_s']:>10.0f} chunks/s at concurrency "
                  f"{cap['concurrency']}, ITL {cap['itl_ms']:g} ms (error "
                  f"{cap['ttft_error_ms']:+.3f} ms){top}")
    summary = {"ttft_ms": TTFT_MS, "output_tokens": OUTPUT_TOKENS,
               "error_limit_ms": ERROR_LIMIT_MS, "steps": rows, "capacity": capacity}
    (work / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\nsaved {work / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
