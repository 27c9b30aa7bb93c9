"""Comparisons a reader can act on (issue 27): 04_compare gives each variant's headline
figures over the baseline's a bootstrap 95 % interval and calls a ratio significant only when
the interval excludes 1. An A/A pair (the same scripted server settings twice, the same
jitter: the request-to-request spread a real engine has; completions, so vLLM's TTFT is the
first text's, not a chat stream's role-only chunk) reads "not significant" on every
ratio; the same pair with the second server slowed by 10 % (TTFT and ITL) reads
"significant" on the TTFT, TPOT and ITL ratios, which sit near 1.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib.pipeline import read_sidecar
from tests._runs import run_day

REPO = Path(__file__).resolve().parents[2]
#: log-normal jitter (sigma 0.3: a real engine's spread and tail), the same seed on both
#: servers: the A/A pair draws the same factors. Times of 300 ms and 50 ms keep the scheduling
#: noise of a loaded 2-core machine (several ms, at times tens) small beside them
_SERVER = ("--jitter", "0.3", "--jitter-seed", "7", "--model", "scripted")


def _compare(tmp_path: Path, tiny_model: Path, url_a: str, url_b: str) -> list[dict[str, Any]]:
    recipe = tmp_path / "aa.yaml"
    recipe.write_text(f"""\
name: aa
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: endpoint, base_url: "{url_a}"}}
variants:
  - {{name: a}}
  - {{name: b, engine: {{kind: endpoint, base_url: "{url_b}"}}}}
scenarios:
  - {{name: chat, endpoint: completions, input_len: 16, output_len: 8, concurrencies: [12],
      num_prompts: 120, repeats: 2}}
""")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe), "--outputs",
                           str(out)], capture_output=True, text=True, cwd=REPO, timeout=600,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = run_day(out) / "aa"
    measured = json.loads((run / "a" / "measure" / "chat-c12.json").read_text())
    assert [r["repeat"] for r in measured["repeats"]] == [0, 1]
    assert measured["intervals"]["source"] == "repeats"
    assert (run / "a" / "measure" / "chat-c12.r1.requests.jsonl").is_file()
    rows: list[dict[str, Any]] = read_sidecar(run / "04_compare.json").results["significance"]
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "id='significance'" in page and "id='intervals'" in page
    assert {r["figure"] for r in rows} >= {"median_ttft_ms", "median_tpot_ms", "median_itl_ms",
                                          "p99_ttft_ms", "output_throughput"}
    return rows


def test_aa_comparison_is_not_significant_on_any_ratio(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    a = scripted("--ttft-ms", "300", "--itl-ms", "50", *_SERVER)
    b = scripted("--ttft-ms", "300", "--itl-ms", "50", *_SERVER)
    rows = _compare(tmp_path, tiny_model, a.url, b.url)
    for r in rows:
        assert r["verdict"] != "significant", r
    timed = [r for r in rows if r["figure"] != "output_throughput"]
    assert all(r["verdict"] == "not significant" for r in timed), timed
    p99 = next(r for r in rows if r["figure"] == "p99_ttft_ms")
    assert p99["ratio"] is not None  # 240 requests a side: enough for a p99


def test_planted_ten_percent_slowdown_is_significant(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    a = scripted("--ttft-ms", "300", "--itl-ms", "50", *_SERVER)
    b = scripted("--ttft-ms", "330", "--itl-ms", "55", *_SERVER)
    rows = _compare(tmp_path, tiny_model, a.url, b.url)
    by = {r["figure"]: r for r in rows}
    for figure in ("median_ttft_ms", "median_ttft_text_ms", "median_tpot_ms",
                   "median_itl_ms", "median_tpot_text_ms"):
        r = by[figure]
        assert r["verdict"] == "significant", r
        assert 1.0 < r["low"] < r["ratio"] < r["high"], r
        assert 1.04 < r["ratio"] < 1.16, r
