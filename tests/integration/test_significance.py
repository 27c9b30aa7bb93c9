"""Comparisons a reader can act on (issue 27): 04_compare gives each variant's headline
figures over the baseline's a bootstrap 95 % interval and calls a ratio significant only when
the interval excludes 1. One run of three variants against the first: an A/A pair (the same
scripted server settings twice, the same jitter: the request-to-request spread a real engine
has; completions, so vLLM's TTFT is the first text's, not a chat stream's role-only chunk)
reads "not significant" on every ratio; the third, a server slowed by 10 % (TTFT and ITL),
reads "significant" on the TTFT, TPOT and ITL ratios, which sit near 1.1. (One run, not one
per pair: the baseline is measured once, as a reader's comparison of several variants does.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchlib.pipeline import read_sidecar
from tests._runs import run_day
from tests.conftest import ScriptedServerProcess

REPO = Path(__file__).resolve().parents[2]
#: log-normal jitter (sigma 0.3: a real engine's spread and tail), the same seed on every
#: server: the A/A pair draws the same factors. Times of 300 ms and 50 ms keep the scheduling
#: noise of a loaded 2-core machine (several ms, at times tens) small beside them
_SERVER = ("--jitter", "0.3", "--jitter-seed", "7", "--model", "scripted")
#: variant → (TTFT ms, ITL ms) of its server; the first is every other's baseline
_TIMES = {"a": ("300", "50"), "same": ("300", "50"), "slow": ("330", "55")}


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory,
         tiny_model: Path) -> Iterator[dict[str, dict[str, dict[str, Any]]]]:
    """The run's significance rows: variant → figure → row (each over variant a)."""
    tmp = tmp_path_factory.mktemp("significance")
    servers: dict[str, ScriptedServerProcess] = {}
    try:  # one that fails to start stops the ones before it
        for name, (ttft, itl) in _TIMES.items():
            servers[name] = ScriptedServerProcess(tmp / f"truth-{name}.jsonl",
                                                  ["--ttft-ms", ttft, "--itl-ms", itl, *_SERVER])
        recipe = tmp / "aa.yaml"
        variants = "\n".join(f'  - {{name: {n}, engine: {{kind: endpoint, base_url: "{s.url}"}}}}'
                             for n, s in servers.items())
        recipe.write_text(f"""\
name: aa
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: endpoint, base_url: "{servers['a'].url}"}}
variants:
{variants}
scenarios:
  - {{name: chat, endpoint: completions, input_len: 16, output_len: 8, concurrencies: [12],
      num_prompts: 120, repeats: 2}}
""")
        out = tmp / "out"
        proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe),
                               "--outputs", str(out)], capture_output=True, text=True,
                              cwd=REPO, timeout=600, env=dict(os.environ))
    finally:
        for server in servers.values():
            server.stop()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = run_day(out) / "aa"
    measured = json.loads((run / "a" / "measure" / "chat-c12.json").read_text())
    assert [r["repeat"] for r in measured["repeats"]] == [0, 1]
    assert measured["intervals"]["source"] == "repeats"
    assert (run / "a" / "measure" / "chat-c12.r1.requests.jsonl").is_file()
    found: list[dict[str, Any]] = read_sidecar(run / "04_compare.json").results["significance"]
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "id='significance'" in page and "id='intervals'" in page
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for r in found:
        assert r["baseline"] == "a", r
        by.setdefault(r["variant"], {})[r["figure"]] = r
    assert set(by) == {"same", "slow"}
    for figures in by.values():
        assert set(figures) >= {"median_ttft_ms", "median_tpot_ms", "median_itl_ms",
                                "p99_ttft_ms", "output_throughput"}
    yield by


def test_aa_comparison_is_not_significant_on_any_ratio(
        rows: dict[str, dict[str, dict[str, Any]]]) -> None:
    same = list(rows["same"].values())
    for r in same:
        assert r["verdict"] != "significant", r
    timed = [r for r in same if r["figure"] != "output_throughput"]
    assert all(r["verdict"] == "not significant" for r in timed), timed
    assert rows["same"]["p99_ttft_ms"]["ratio"] is not None  # 240 requests a side: a p99


def test_planted_ten_percent_slowdown_is_significant(
        rows: dict[str, dict[str, dict[str, Any]]]) -> None:
    for figure in ("median_ttft_ms", "median_ttft_text_ms", "median_tpot_ms",
                   "median_itl_ms", "median_tpot_text_ms"):
        r = rows["slow"][figure]
        assert r["verdict"] == "significant", r
        assert 1.0 < r["low"] < r["ratio"] < r["high"], r
        assert 1.04 < r["ratio"] < 1.16, r
