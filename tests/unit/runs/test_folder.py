"""The run folder names every file of a run (relative when it is), keeps earlier attempts
whole, and finds a recipe's runs; a notebook on its own finds its recipe and makes a
scratch folder only when it writes files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchlib.pipeline import RunFolder, load
from benchlib.pipeline import _standalone as standalone
from benchlib.runs._paths import kit_root


def test_paths_stay_relative_as_the_notebooks_see_them() -> None:
    folder = RunFolder(path=Path("."))
    assert str(folder.results("03_measure")) == ".results/03_measure.json"
    assert str(folder.measure_json("chat", 4)) == "measure/chat-c4.json"
    assert str(folder.ramp_json("long", 8192)) == "measure/long-ramp-8192.json"
    assert str(folder.summary_png) == "measure/summary.png"
    assert folder.recipe_json.name == "recipe.json" and folder.state_json.name == "run.json"


def test_earlier_attempts_are_kept_whole(tmp_path: Path) -> None:
    folder = RunFolder(path=tmp_path)
    folder.keep_earlier_attempt("02_launch")  # nothing yet: nothing moved
    assert list(tmp_path.iterdir()) == []
    folder.sidecar("02_launch").write_text("skipped")  # a skipped step has no notebook
    folder.keep_earlier_attempt("02_launch")
    folder.sidecar("02_launch").write_text("2")
    folder.notebook("02_launch").write_text("2")
    folder.keep_earlier_attempt("02_launch")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "02_launch.attempt-1.json", "02_launch.attempt-2.ipynb", "02_launch.attempt-2.json"]
    folder.engine_log.write_text("log 1")
    folder.keep_earlier_engine_log()
    assert (tmp_path / "engine.attempt-1.log").read_text() == "log 1"


def test_runs_of_a_recipe_oldest_first(tmp_path: Path) -> None:
    first = RunFolder.create(tmp_path, "demo")
    second = RunFolder.create(tmp_path, "demo")
    RunFolder.create(tmp_path, "demo-h200")  # another recipe whose name starts the same
    (tmp_path / "2020-01-01" / "demo").mkdir(parents=True)
    assert second.path.name == "demo-2"
    assert [f.path for f in RunFolder.runs_of(tmp_path, "demo")] == [
        tmp_path / "2020-01-01" / "demo", first.path, second.path]


def test_a_notebook_on_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # like a kernel in notebooks/: params/ is not here
    recipe = load("params/demo.yaml")
    assert recipe.name == "demo" and recipe.model.local_path == kit_root() / ".models/smollm2"
    monkeypatch.setattr(standalone, "scratch_outputs", lambda: tmp_path / "scratch")
    assert standalone.step_folder("", recipe, scratch=False) is None
    folder = standalone.step_folder("", recipe, scratch=True)
    assert folder is not None and folder.path.name == "demo"
    assert folder.path.parent.parent == tmp_path / "scratch"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", folder.path.parent.name)  # its day, UTC
    assert standalone.results_file("", folder, "03_measure") == str(
        folder.path / ".results" / "03_measure.json")
    assert standalone.results_file("", None, "00_plan") == ""
