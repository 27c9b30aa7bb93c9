"""``benchlib sweep`` against a scripted server with a known saturation point.

The server generates at most ``SLOTS`` streams at once (``--max-streams``): up to that
concurrency every request's TTFT is the scripted 20 ms; one more, and some request waits a
whole stream (20 ms + 15 × 15 ms = 245 ms) for a slot. The SLO, p99 TTFT ≤ 130 ms, sits
> 100 ms from both sides, so a busy machine's noise cannot move the knee: the search must
find exactly ``SLOTS`` (the issue asks for one step), wherever it starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchlib.cli import main
from benchlib.measure import MeasureConfig, read_requests, requests_path
from benchlib.sweep import SweepConfig, SweepSummary, parse_slos, sweep

SLOTS = 6
SERVER = ("--ttft-ms", "20", "--itl-ms", "15", "--max-streams", str(SLOTS))
WORKLOAD = ("--model", "scripted", "--input-len", "16", "--output-len", "16")


def _kept(out: Path, summary: SweepSummary) -> None:
    """Every probe is a whole measure result, with its per-request records beside it."""
    for probe in summary.probes:
        result = json.loads((out / probe.result_json).read_text())
        assert result["max_concurrency"] == int(probe.load)
        records = read_requests(requests_path(out / probe.result_json))
        assert len(records) == probe.num_prompts == result["num_prompts"]
        # vllm bench serve's goodput: a request is good when it meets every --goodput SLO
        good = sum(1 for r in records if r.success and r.ttft_first_choice_ms is not None
                   and r.ttft_first_choice_ms <= 130)
        assert probe.request_goodput == pytest.approx(good / result["duration"])
    files = {p.name for p in out.iterdir()}
    assert files == {"sweep.json", "sweep.png"} | {
        f"c{int(p.load)}{suffix}" for p in summary.probes
        for suffix in (".json", ".requests.jsonl")}


def test_the_knee_of_a_known_saturation_point_from_above(
        scripted: Callable[..., Any], tiny_model: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    server = scripted(*SERVER)
    out = tmp_path / "sweep"
    code = main(["sweep", "--base-url", server.url, *WORKLOAD, "--tokenizer", str(tiny_model),
                 "--slo", "ttft_p99_ms=130", "--goodput", "ttft:130", "--start", "12",
                 "--prompts-per-slot", "2", "--output-dir", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    summary = SweepSummary.model_validate_json((out / "sweep.json").read_text())
    loads = [int(p.load) for p in summary.probes]
    assert summary.knee == SLOTS and summary.first_fail == SLOTS + 1, (loads, printed)
    assert loads == [12, 6, 9, 7], printed  # down from the start, then bisected
    assert summary.finished and not summary.ceiling_reached
    fail = summary.probe_at(SLOTS + 1)
    assert fail is not None and fail.failed_by[0].startswith("ttft_p99_ms ")
    assert any(c.name == "good_fraction" and not c.ok for c in fail.checks)
    assert printed.count("probe ") == 4 and f"knee: concurrency {SLOTS}" in printed
    _kept(out, summary)
    assert (out / "sweep.png").stat().st_size > 10_000


def test_the_knee_from_below_through_the_python_api(
        scripted: Callable[..., Any], tiny_model: Path, tmp_path: Path) -> None:
    server = scripted(*SERVER)
    base = MeasureConfig(base_url=server.url, model="scripted", tokenizer=tiny_model,
                         input_len=16, output_len=16, goodput={"ttft": 130.0})
    lines: list[str] = []
    summary = sweep(SweepConfig(base=base, slos=parse_slos(["ttft_p99_ms=130"]), start=2,
                                floor=1, ceiling=64, prompts_per_slot=2,
                                output_dir=tmp_path / "up"), log=lines.append)
    assert summary.knee == SLOTS and summary.first_fail == SLOTS + 1, lines
    assert [int(p.load) for p in summary.probes] == [2, 4, 8, 6, 7], lines
    assert len(lines) == 5 and lines[0].startswith("probe 1: concurrency 2: pass")
    _kept(tmp_path / "up", summary)


def test_a_server_that_answers_nothing_stops_the_sweep(tiny_model: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    out = tmp_path / "down"
    code = main(["sweep", "--base-url", "http://127.0.0.1:9", *WORKLOAD, "--tokenizer",
                 str(tiny_model), "--slo", "ttft_p99_ms=100", "--start", "2",
                 "--prompts-per-slot", "1", "--request-timeout", "5", "--output-dir",
                 str(out)])
    assert code == 1
    assert "all 2 requests failed" in capsys.readouterr().err
    summary = SweepSummary.model_validate_json((out / "sweep.json").read_text())
    assert len(summary.probes) == 1 and not summary.finished  # what ran is kept
    assert (out / "c2.json").is_file()
