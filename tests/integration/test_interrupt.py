"""Ctrl-C (SIGINT to the runner's process group, as a terminal sends it) and SIGTERM (to the
runner alone, as ``kill`` or a scheduler sends it) mid-scenario: ``benchlib run`` stops its
engine — the engine's whole process group is gone — and leaves an unfinished run folder that
the same command resumes to the end, in the same folder, with the scenario measured whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_pipeline import (
    REPO,
    _group_members,
    _kill_kernels,
    _scripted_engine,
    _write_pgid,
    day,
)

PROMPTS = 10


def _recipe(tmp_path: Path, tiny_model: Path, pgid_file: Path) -> Path:
    exe = _scripted_engine(tmp_path / "slow-engine", "--ttft-ms", "600", "--itl-ms", "5",
                           "--model", "scripted", before=_write_pgid(pgid_file))
    path = tmp_path / "t.yaml"
    path.write_text(f"""\
name: t
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: llamacpp, executable: "{exe}", ready_timeout_s: 60}}
scenarios:
  - {{name: chat, endpoint: chat, input_len: 16, output_len: 4, num_prompts: {PROMPTS}}}
steps: [02_launch, 03_measure]
""")
    return path


def _sigint_as_in_a_terminal() -> None:
    """SIGINT back to its default in the runner, as a terminal's foreground job has it: a
    test run started in the background of a non-interactive shell (``.ci/run &``) inherits
    SIGINT ignored, and a Python child keeps an ignored SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(path: Path, out: Path, console: Path, runtime: Path) -> subprocess.Popen[bytes]:
    with console.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "benchlib", "run", str(path), "--outputs", str(out)],
            stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
            preexec_fn=_sigint_as_in_a_terminal,
            env={**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)})


@pytest.mark.parametrize("how", ["SIGINT to the group", "SIGTERM to the runner"])
def test_an_interrupted_run_stops_its_engine_and_resumes(tmp_path: Path, tiny_model: Path,
                                                         how: str) -> None:
    pgid_file, runtime = tmp_path / "engine.pgid", tmp_path / "jupyter-runtime"
    path = _recipe(tmp_path, tiny_model, pgid_file)
    out, console = tmp_path / "out", tmp_path / "console.txt"
    run_dir = day(out) / "t"
    runner = _start(path, out, console, runtime)
    engine_pgid = None
    try:
        deadline = time.monotonic() + 180
        # mid-scenario: the first requests are written, most are still to come
        while not any(f.stat().st_size for f in (run_dir / "measure").glob("*.requests.jsonl")):
            assert runner.poll() is None, console.read_text()[-3000:]
            assert time.monotonic() < deadline, console.read_text()[-3000:]
            time.sleep(0.1)
        engine_pgid = int(pgid_file.read_text())
        assert _group_members(engine_pgid), "the engine should be running mid-scenario"
        if how.startswith("SIGINT"):
            os.killpg(runner.pid, signal.SIGINT)
        else:
            runner.send_signal(signal.SIGTERM)
        code = runner.wait(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
        _kill_kernels(runtime)
    text = console.read_text()
    assert code != 0, text[-3000:]
    # the engine's process group is gone: nothing left serving, nothing to reap by hand
    deadline = time.monotonic() + 10
    while _group_members(engine_pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    leftover = _group_members(engine_pgid)
    if leftover:
        os.killpg(engine_pgid, signal.SIGKILL)
    assert leftover == [], f"engine group {engine_pgid} outlived the interrupted run"
    state = json.loads((run_dir / "run.json").read_text())
    assert state["finished"] is False, state
    partial = sum(1 for f in (run_dir / "measure").glob("*.requests.jsonl")
                  for _ in f.read_text().splitlines())
    assert 0 < partial < PROMPTS, partial  # stopped mid-scenario, what it measured kept

    # the same command resumes it: same folder, the scenario measured whole this time
    resumed = _start(path, out, console, runtime)
    try:
        code = resumed.wait(timeout=300)
    finally:
        if resumed.poll() is None:
            resumed.kill()
        _kill_kernels(runtime)
    text = console.read_text()
    assert code == 0, text[-3000:]
    assert f"resuming: {run_dir}" in text
    state = json.loads((run_dir / "run.json").read_text())
    assert state["finished"] is True and set(state["statuses"].values()) == {"ok"}, state
    result = json.loads(next((run_dir / "measure").glob("chat-c*.json")).read_text())
    assert (result["completed"], result["failed"]) == (PROMPTS, 0)
    assert not _group_members(int(pgid_file.read_text()))
    assert not list(day(out).glob("t-*")), "resumed in place, not a new folder"
