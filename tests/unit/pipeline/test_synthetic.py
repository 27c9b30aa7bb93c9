"""Results from benchlib's scripted server are shown apart: 04_compare labels the run
'(synthetic)', lists it, and its provenance row says so even for a notebook's own run folder
(no sidecar, no provenance); the report opens with a warning."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import JsonValue

from benchlib.pipeline.steps.compare import compare_runs
from benchlib.report import render_report
from benchlib.runs._folder import RunFolder
from benchlib.runs._io import synthetic_results
from tests.unit.report._run import make_run


def _record(synthetic: bool) -> dict[str, JsonValue]:
    return {"scenario": "chat", "concurrency": 1, "completed": 2, "failed": 0,
            "median_ttft_ms": 5.0, "median_tpot_ms": 1.0, "synthetic": synthetic}


def test_compare_shows_a_scripted_run_apart(tmp_path: Path) -> None:
    notebook_run = tmp_path / "notebooks" / "2026-12-04" / "demo"
    engine_run = tmp_path / "outputs" / "2026-12-04" / "demo"
    results = RunFolder(path=notebook_run).results("03_measure")
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"chat/c1": _record(True)}))  # no sidecar: a notebook's
    engine_run.mkdir(parents=True)
    (engine_run / "03_measure.json").write_text(json.dumps(
        {"results": {"chat/c1": _record(False)},
         "provenance": {"engine": {"name": "vllm"}, "synthetic": False}}))
    out = tmp_path / "compare.json"
    table, prov = compare_runs([engine_run, notebook_run], out)
    assert list(table["run"]) == ["2026-12-04/demo", "2026-12-04/demo (synthetic)"]
    row = prov.loc["synthetic (scripted server)"]
    assert bool(row["differs"]) and row["2026-12-04/demo (synthetic)"] is True
    saved = json.loads(out.read_text())
    assert saved["synthetic_runs"] == [str(notebook_run)]
    assert "synthetic (scripted server)" in saved["provenance_differences"]


def test_synthetic_results_reads_every_record() -> None:
    assert synthetic_results({"a/c1": _record(False), "b/c1": _record(True)}) is True
    assert synthetic_results({"a/c1": _record(False)}) is False
    assert synthetic_results({"ramp": {"lens": [1]}}) is None


def test_the_report_opens_with_a_warning(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    assert "id='synthetic'" not in render_report(run).html.read_text()
    measured = run / "llamacpp" / ".results" / "03_measure.json"
    data = json.loads(measured.read_text())
    data["chat/c1"]["synthetic"] = True
    measured.write_text(json.dumps(data))
    page = render_report(run).html.read_text()
    banner = page[page.index("id='synthetic'"):page.index("id='writeup'")]
    assert "llamacpp measured benchlib's scripted server" in banner
