"""Which folder a run goes to: never another recipe's, never a changed recipe's."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

from benchlib.pipeline import RunFolder, RunSummary


def _pick_run_dir(outputs: Path, name: str, digest: str, force: bool,
                  log: Callable[[str], None]) -> tuple[Path, bool]:
    folder, resumed = RunFolder.pick(outputs, name, digest, force, log)
    return folder.path, resumed


def state(folder: Path, finished: bool, digest: str) -> None:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"finished": finished,
                                                 "recipe_sha256": digest}))


def test_resume_only_the_same_unfinished_recipe(tmp_path: Path) -> None:
    day = tmp_path / dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    logs: list[str] = []
    state(day / "demo-h200", False, "x")  # another recipe whose name starts the same
    path, resumed = _pick_run_dir(tmp_path, "demo", "abc", False, logs.append)
    assert (path.name, resumed) == ("demo", False)
    (path / "run.json").write_text(json.dumps({"finished": False, "recipe_sha256": "abc"}))
    assert _pick_run_dir(tmp_path, "demo", "abc", False, logs.append) == (path, True)
    # the recipe changed: a new folder, and the user is told why
    path2, resumed2 = _pick_run_dir(tmp_path, "demo", "def", False, logs.append)
    assert (path2.name, resumed2) == ("demo-2", False) and "recipe changed" in logs[-1]
    # --force never resumes
    assert _pick_run_dir(tmp_path, "demo", "abc", True, logs.append)[0].name == "demo-3"


def test_a_run_started_before_midnight_resumes_after_it(tmp_path: Path) -> None:
    logs: list[str] = []
    state(tmp_path / "2020-01-01" / "demo", True, "abc")  # an older day's finished run
    state(tmp_path / "2020-01-02" / "demo-2", False, "abc")  # the latest: unfinished
    path, resumed = _pick_run_dir(tmp_path, "demo", "abc", False, logs.append)
    assert (path, resumed) == (tmp_path / "2020-01-02" / "demo-2", True)
    assert logs == ["resuming a run started on 2020-01-02"]
    # only the latest run resumes: when it finished, an older unfinished one stays as it is
    state(tmp_path / "2020-01-03" / "demo", True, "abc")
    state(tmp_path / "2020-01-01" / "demo-2", False, "abc")
    path, resumed = _pick_run_dir(tmp_path, "demo", "abc", False, logs.append)
    assert not resumed and path.parent.name == dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


def test_a_run_with_no_status_is_not_ok(tmp_path: Path) -> None:
    assert RunSummary(tmp_path, {"00_plan": "ok", "01_download": "failed"}).ok is False
