"""``engine.kind: scripted``: a recipe whose engine is the kit's own scripted server runs the
pipeline end to end with no engine installed, and its results say they are synthetic."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from benchlib.pipeline import read_sidecar
from tests.integration.test_pipeline import day, recipe, run


def test_a_scripted_engine_is_started_measured_and_flagged_synthetic(
        tmp_path: Path, tiny_model: Path) -> None:
    # its environment (this interpreter's) held to a lock: one pin held, one off, one missing
    lock = tmp_path / "requirements.lock"
    lock.write_text(f"pydantic=={importlib.metadata.version('pydantic')}\npackaging==0.0.1\n"
                    "not-installed-here==1.0 --hash=sha256:00\n", encoding="utf-8")
    engine = ('{kind: scripted, ready_timeout_s: 60, args: ["--ttft-ms", "2", "--itl-ms", "1"],'
              f' lock: "{lock}"}}')
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
    assert engine_record.lock is not None and engine_record.lock.error is None
    assert (engine_record.lock.pins, engine_record.lock.matched) == (3, 1)
    assert [d.name for d in engine_record.lock.differs] == ["packaging", "not-installed-here"]
    assert any(m.startswith(f"engine environment differs from {lock} on 2 of 3 pins")
               for m in launch.provenance.hardware_mismatches), launch.provenance
    measure = read_sidecar(run_dir / "03_measure.json")
    assert measure.status == "ok", measure.error
    assert set(measure.results) == {"chat/c1", "chat/c4", "summ/c2"}
    for key in measure.results:
        result_json = next(run_dir.rglob(f"{key.replace('/', '-')}.json"))
        data = json.loads(result_json.read_text())
        assert data["synthetic"] is True and data["completed"] > 0, key


def test_benchlib_run_reads_the_recipe_file_once(
        tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One recipe loader (issue 38): `benchlib run` opens the recipe once and hands the
    typed recipe on (the notebooks read the run folder's recipe.json, not the file)."""
    import yaml

    from benchlib.cli import main

    engine = '{kind: scripted, ready_timeout_s: 60, args: ["--ttft-ms", "2", "--itl-ms", "1"]}'
    path = recipe(tmp_path, tiny_model, engine, "steps: [02_launch]\n")
    text = path.read_text(encoding="utf-8")
    real = yaml.safe_load
    reads: list[str] = []

    def counting(stream: object) -> object:
        if stream == text:
            reads.append("read")
        return real(stream)  # type: ignore[arg-type]

    monkeypatch.setattr(yaml, "safe_load", counting)
    assert main(["run", str(path), "--outputs", str(tmp_path / "out")]) == 0
    assert reads == ["read"]
