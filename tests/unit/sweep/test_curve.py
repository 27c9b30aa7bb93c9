"""The curve: sweep.png, and the same in 04_compare and the report when a run folder keeps a
sweep (``RUN/sweep/NAME/sweep.json``); nothing changes for a run without one."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchlib.pipeline import compare_runs
from benchlib.pipeline.steps.compare import _sweeps
from benchlib.report import render_report, report_context
from benchlib.report._html import _sweeps as _html_sweeps
from benchlib.report._view import read_run
from benchlib.sweep import Check, Probe, SweepSummary, read_sweeps, sweep_figure
from tests.unit.report._run import make_run


def _probe(load: int, knee: int) -> Probe:
    ttft = 25.0 if load <= knee else 190.0
    check = Check(name="ttft_p99_ms", value=ttft, limit=100.0, bound="max",
                  ok=ttft <= 100, excess_pct=ttft - 100)
    return Probe(load=load, result_json=f"c{load}.json", passed=check.ok, checks=[check],
                 failed_by=[] if check.ok else [check.describe()], num_prompts=8 * load,
                 completed=8 * load, request_throughput=5.0 * min(load, knee),
                 request_goodput=None, output_throughput=80.0 * min(load, knee),
                 seconds=1.0)


def _summary(knee: int = 6) -> SweepSummary:
    return SweepSummary(
        mode="concurrency", base_url="http://h:1", model="m", slos={"ttft_p99_ms": 100.0},
        goodput={}, min_good_fraction=None, start=2, start_source="given", floor=1,
        ceiling=128, step=None, probes=[_probe(c, knee) for c in (2, 4, 8, 6, 7)],
        knee=knee, first_fail=knee + 1, finished=True, seconds=5.0)


def _keep(run: Path, name: str, summary: SweepSummary) -> None:
    folder = run / "sweep" / name
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text(summary.model_dump_json())


def test_the_figure_marks_the_knee() -> None:
    fig = sweep_figure([("chat", _summary())])
    left, right = fig.axes
    legend = left.get_legend()
    assert legend is not None and "knee 6" in [t.get_text() for t in legend.get_texts()]
    assert right.get_title() == "chat: SLOs (1 = the limit)"


def test_read_sweeps_names_them_by_folder_and_skips_what_is_not_one(tmp_path: Path) -> None:
    _keep(tmp_path, "chat", _summary())
    _keep(tmp_path, "long", _summary(3))
    (tmp_path / "sweep" / "broken").mkdir()
    (tmp_path / "sweep" / "broken" / "sweep.json").write_text("{")
    assert [(n, s.knee) for n, s in read_sweeps(tmp_path / "sweep")] == [("chat", 6),
                                                                          ("long", 3)]


def test_compare_draws_the_curve_and_records_the_knee(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    assert _sweeps(run) == (None, None)  # most runs: nothing added
    _keep(run, "chat", _summary())
    table, chart = _sweeps(run)
    assert table is not None and chart is not None
    assert table.loc[0, "knee"] == 6 and table.loc[0, "first_fail"] == 7
    assert table.loc[0, "failed_by"] == "ttft_p99_ms 190 > 100 (+90 %)"
    assert (run / "sweep" / "sweep.png").stat().st_size > 10_000
    out = tmp_path / "04_compare.json"
    compare_runs([], out, sweeps=table)
    saved = json.loads(out.read_text())
    assert saved["sweeps"][0]["sweep"] == "chat" and saved["sweeps"][0]["knee"] == 6


def test_the_report_shows_the_curve_only_when_the_run_keeps_a_sweep(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    assert _html_sweeps(read_run(run)) == ""  # most runs: nothing added
    _keep(run, "vllm-ngram", _summary())
    ctx = report_context(run)
    assert ctx["sweeps"]["vllm_ngram"]["knee"] == 6  # a write-up can cite it
    page = render_report(run).html.read_text()
    assert re.search(r"<figure id='fig-sweep'><img alt='[^']+' "
                     r"src='data:image/png;base64,[A-Za-z0-9+/=]{2000,}'>", page)
    assert page.count("<td>vllm-ngram</td><td>concurrency</td><td>6</td>") == 1
