"""A step's results file: written whole or not at all, read back as JSON."""

from __future__ import annotations

from pathlib import Path

from benchlib.runs import (
    MeasureStep,
    read_results,
    save_results,
    synthetic_results,
    write_atomic,
)


def test_saved_results_read_back_and_only_given_keys_with_exclude_unset(tmp_path: Path
                                                                         ) -> None:
    path = tmp_path / ".results" / "03_measure.json"
    step = MeasureStep.model_validate({"chat/c1": {"completed": 2}})
    save_results(path, step, exclude_unset=True)
    assert read_results(path) == {"chat/c1": {"completed": 2}}
    save_results(path, step)  # every field: the defaults too
    data = read_results(path)
    assert isinstance(data["chat/c1"], dict) and data["chat/c1"]["failed"] == 0
    assert read_results(tmp_path / "none.json") == {}
    save_results("", step)  # a notebook run on its own: nothing saved


def test_an_atomic_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    write_atomic(path, "{}\n")
    assert path.read_text() == "{}\n" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_synthetic_results_of_raw_json() -> None:
    assert synthetic_results({"a/c1": {"synthetic": True}}) is True
    assert synthetic_results({"a/ramp": {"steps": []}}) is None
