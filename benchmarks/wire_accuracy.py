"""Wire accuracy: benchlib, ``vllm bench serve`` and GuideLLM against the same scripted server.

The scripted server (its own process, sharing this machine's CPUs with the client under test)
records when each request's bytes arrived (kernel stamp) and when each chunk's ``send``
returned: the truth. Each tool runs the same workload against it in turn, and its reported
median TTFT and TPOT are compared with the truth's medians over the requests of that run.
A second scenario sends 3 tokens per chunk (MTP / speculative decoding) to show who counts
tokens and who counts chunks.

Run: ``make bench`` (or ``.venv/bin/python benchmarks/wire_accuracy.py``). Needs
``make engine`` (vllm bench serve) and ``make peers`` (GuideLLM). Writes
``benchmarks/results/wire_accuracy-<UTC time>.json`` and prints a table.
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

from benchmarks._peers import (
    PeerResult,
    PeerRunError,
    guidellm_executable,
    run_guidellm,
    run_vllm_bench,
    vllm_python,
)

REPO = Path(__file__).resolve().parents[1]
TTFT_MS, ITL_MS, INPUT_LEN = 25.0, 8.0, 64


def start_server(truth: Path, output_tokens: int, tokens_per_chunk: int
                 ) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlib", "scripted-server", "--port", "0", "--truth",
         str(truth), "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--output-tokens",
         str(output_tokens), "--tokens-per-chunk", str(tokens_per_chunk), "--model", "scripted"],
        stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split()[-1]


def truth_medians(truth: Path) -> tuple[float, float]:
    ttft, tpot = [], []
    for line in truth.read_text().splitlines():
        t = json.loads(line)
        w, a, n = t["content_writes_ns"], t["arrival_ns"], t["completion_tokens"]
        ttft.append((w[0] - a) / 1e6)
        if n > 1:
            tpot.append((w[-1] - w[0]) / 1e6 / (n - 1))
    return statistics.median(ttft), statistics.median(tpot)


def run_benchlib(url: str, model: str, tokenizer: Path, *, output_len: int, num_prompts: int,
                 max_concurrency: int, workdir: Path, **_: Any) -> PeerResult:
    out = workdir / "benchlib.json"
    workdir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "benchlib", "measure", "--base-url", url, "--model", model,
         "--tokenizer", str(tokenizer), "--input-len", str(INPUT_LEN), "--output-len",
         str(output_len), "--num-prompts", str(num_prompts), "--max-concurrency",
         str(max_concurrency), "--result-json", str(out), "--disable-tqdm"],
        check=True, capture_output=True, cwd=REPO)
    r = json.loads(out.read_text())
    return PeerResult(tool="benchlib", median_ttft_ms=r["median_ttft_ms"],
                      mean_ttft_ms=r["mean_ttft_ms"], median_tpot_ms=r["median_tpot_ms"],
                      mean_tpot_ms=r["mean_tpot_ms"], total_output_tokens=r["total_output_tokens"],
                      completed=r["completed"], raw_path=out)


Runner = Callable[..., PeerResult]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", type=Path, default=REPO / ".models" / "tiny-llama")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args(argv)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work = args.out / f"wire_accuracy-{stamp}"
    tools: list[tuple[str, Runner]] = [("benchlib", run_benchlib)]
    if vllm_python().exists():
        tools.append(("vllm bench serve", run_vllm_bench))
    if guidellm_executable().exists():
        tools.append(("guidellm", run_guidellm))
    rows: list[dict[str, Any]] = []
    scenarios = [(c, 16, 1) for c in args.concurrency] + [(8, 30, 3)]
    for conc, out_tokens, per_chunk in scenarios:
        n = max(30, 4 * conc)
        for name, runner in tools:
            truth = work / f"truth-{name.replace(' ', '_')}-c{conc}-k{per_chunk}.jsonl"
            truth.parent.mkdir(parents=True, exist_ok=True)
            proc, url = start_server(truth, out_tokens, per_chunk)
            try:
                res = runner(url, "scripted", args.tokenizer, endpoint="completions",
                             input_len=INPUT_LEN, output_len=out_tokens, num_prompts=n,
                             max_concurrency=conc, seed=0,
                             workdir=truth.with_suffix(""))
            except (PeerRunError, subprocess.CalledProcessError) as exc:
                print(f"{name} failed at c={conc}: {exc}", file=sys.stderr)
                continue
            finally:
                proc.terminate()
                proc.wait()
            true_ttft, true_tpot = truth_medians(truth)
            rows.append({"tool": name, "concurrency": conc, "tokens_per_chunk": per_chunk,
                         "requests": n, "median_ttft_ms": res.median_ttft_ms,
                         "true_median_ttft_ms": true_ttft,
                         "ttft_error_ms": res.median_ttft_ms - true_ttft,
                         "median_tpot_ms": res.median_tpot_ms, "true_median_tpot_ms": true_tpot,
                         "tpot_error_ms": res.median_tpot_ms - true_tpot,
                         "total_output_tokens": res.total_output_tokens,
                         "true_output_tokens": res.completed * out_tokens})
    print(f"\nscripted server: TTFT {TTFT_MS} ms, ITL {ITL_MS} ms per chunk; errors = tool − truth")
    print(f"{'tool':<18}{'conc':>5}{'tok/chunk':>10}{'TTFT err ms':>13}{'TPOT err ms':>13}"
          f"{'out tokens':>12}{'truth':>8}")
    for r in rows:
        print(f"{r['tool']:<18}{r['concurrency']:>5}{r['tokens_per_chunk']:>10}"
              f"{r['ttft_error_ms']:>+13.2f}{r['tpot_error_ms']:>+13.3f}"
              f"{r['total_output_tokens']:>12}{r['true_output_tokens']:>8}")
    (work / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(f"\nsaved {work / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
