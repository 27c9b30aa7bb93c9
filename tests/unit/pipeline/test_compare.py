"""04_compare: two runs side by side, and every provenance difference between them flagged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.pipeline import compare_runs


def run_folder(root: Path, name: str, engine_version: str, gpu: str) -> Path:
    folder = root / "2026-01-01" / name
    folder.mkdir(parents=True)
    provenance: dict[str, Any] = {
        "kit_commit": "abc", "kit_dirty": False, "python": "CPython 3.11.9",
        "engine": {"name": "vllm", "version": engine_version, "command": "vllm serve m"},
        "model": {"id": "org/m", "resolved_revision": "r1", "files_hash": {"sha256": "f"}},
        "hardware": {"gpus": [{"name": gpu, "power_limit_w": 700.0}], "gpu_count": 1,
                     "driver_version": "570", "cpu": {"model": "Xeon"}}}
    results = {"chat/c1": {"scenario": "chat", "concurrency": 1, "completed": 8, "failed": 0,
                           "median_ttft_ms": 20.0, "median_tpot_ms": 5.0}}
    (folder / "03_measure.json").write_text(json.dumps({"results": results,
                                                        "provenance": provenance}))
    return folder


def test_compare_flags_each_provenance_difference(tmp_path: Path) -> None:
    a = run_folder(tmp_path, "demo", "0.32.0", "NVIDIA H200")
    b = run_folder(tmp_path, "demo-2", "0.33.1", "NVIDIA H100 80GB HBM3")
    out = tmp_path / "04_compare.results.json"
    table, prov = compare_runs([a, b], out)
    assert list(table["run"]) == ["2026-01-01/demo", "2026-01-01/demo-2"]
    assert list(prov.columns) == ["2026-01-01/demo", "2026-01-01/demo-2", "differs"]
    flagged = set(prov.index[prov["differs"]])
    assert flagged == {"engine version", "GPU"}
    assert prov.loc["engine version", "2026-01-01/demo-2"] == "0.33.1"
    saved = json.loads(out.read_text())
    assert sorted(saved["provenance_differences"]) == ["GPU", "engine version"]


def test_compare_labels_the_run_folder_given_as_dot(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner runs 04_compare in the run folder and names it "."."""
    a = run_folder(tmp_path, "demo", "0.32.0", "NVIDIA H200")
    b = run_folder(tmp_path, "demo-2", "0.32.0", "NVIDIA H200")
    monkeypatch.chdir(b)
    table, prov = compare_runs([".", a])
    assert list(table["run"]) == ["2026-01-01/demo-2", "2026-01-01/demo"]
    assert not prov["differs"].any()


def test_compare_names_a_folder_without_a_measure_sidecar(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        compare_runs([tmp_path])
    assert info.value.field == "compare.runs" and info.value.exit_code == 2


def test_a_row_whose_streams_came_in_bursts_says_its_times_are_bounds() -> None:
    from benchlib.pipeline.steps._variants import timing_caveats

    assert timing_caveats({"buffered_streams": 0, "completed": 4, "client_bound": False}) == []
    notes = timing_caveats({"buffered_streams": 2, "completed": 2, "client_bound": True})
    assert notes[0] == "2 of 2 streams arrived in bursts (TTFT, TPOT are bounds)"
    assert notes[1].startswith("client_bound")
    assert timing_caveats({"buffered_streams": None, "client_bound": None}) == []


def test_a_speedup_that_cannot_be_made_says_why() -> None:
    """A speculating row whose own or whose baseline's TPOT was not measured (every chunk of
    the streams in one read: TPOT 0, per-user tok/s none) gets no ratio, and says which side
    and why."""
    from benchlib.pipeline.steps._variants import _no_speedup, _speed

    bursts = "3 of 4 streams arrived in bursts (TTFT, TPOT are bounds)"
    spec = {"variant": "ngram", "speedup_over": "nospec", "per_user_tok_s": 700.0,
            "caveats": "engine: vllm"}
    base = {"variant": "nospec", "per_user_tok_s": float("nan"),
            "caveats": f"engine: vllm; {bursts}"}
    assert _speed(spec) == 700.0 and _speed(base) is None
    assert _speed({"per_user_tok_s": 0.0}) is None and _speed({"per_user_tok_s": None}) is None
    assert _no_speedup(spec, base, ("", bursts)) == ("no speedup: per-user tok/s not measured for nospec "
                                       "(3 of 4 streams arrived in bursts (TTFT, TPOT are "
                                       "bounds))")
    both = _no_speedup({**spec, "per_user_tok_s": None}, base, ("client_bound (x)", bursts))
    assert "ngram (client_bound (x)) and nospec (3 of 4" in both
    assert _no_speedup(spec, None) == ("no speedup: nospec has no row at this scenario and "
                                       "concurrency")
