"""``engine.kind: scripted``: a recipe whose engine is the kit's own scripted server runs the
pipeline end to end with no engine installed, and its results say they are synthetic."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.pipeline import read_sidecar
from tests.integration.test_pipeline import day, recipe, run


def test_a_scripted_engine_is_started_measured_and_flagged_synthetic(
        tmp_path: Path, tiny_model: Path) -> None:
    engine = '{kind: scripted, ready_timeout_s: 60, args: ["--ttft-ms", "2", "--itl-ms", "1"]}'
    proc = run(recipe(tmp_path, tiny_model, engine, "steps: [02_launch, 03_measure]\n"),
               tmp_path / "out")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = day(tmp_path / "out") / "t"
    launch = read_sidecar(run_dir / "02_launch.json")
    assert launch.status == "ok", launch.error
    engine_record = launch.provenance.engine
    assert engine_record.name == "scripted"
    assert engine_record.command is not None and "scripted-server" in engine_record.command
    assert "--ttft-ms 2" in engine_record.command
    measure = read_sidecar(run_dir / "03_measure.json")
    assert measure.status == "ok", measure.error
    assert set(measure.results) == {"chat/c1", "chat/c4", "summ/c2"}
    for key in measure.results:
        result_json = next(run_dir.rglob(f"{key.replace('/', '-')}.json"))
        data = json.loads(result_json.read_text())
        assert data["synthetic"] is True and data["completed"] > 0, key
