"""``benchlib measure --workers N``: the one schedule from N processes, one merged record file.

Against the scripted server (its own process) with its wire truth: every request is sent
once, at the time the run's seeded schedule gives it, from the worker that owns it; the
records of all workers land in one ``.requests.jsonl``; each worker's timing self-check is in
the result and on the console; a worker killed mid-run stops the run with its name and
keeps every finished request's line.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchlib.measure import MeasureResult, read_requests, requests_path
from benchlib.measure.workload._arrivals import arrival_offsets

from ..conftest import REPO, ScriptedServerProcess
from ._truth import errors_vs_truth

RATE, PROMPTS = 40.0, 48


def _measure(url: str, out: Path, tiny_model: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "benchlib", "measure", "--base-url", url, "--model",
            "scripted", "--tokenizer", str(tiny_model), "--input-len", "16", "--output-len",
            "8", "--result-json", str(out), "--disable-tqdm", *extra]


def test_two_workers_send_the_one_schedule(scripted: Callable[..., ScriptedServerProcess],
                                           tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "20", "--itl-ms", "5")
    out = tmp_path / "w.json"
    proc = subprocess.run(_measure(server.url, out, tiny_model, "--num-prompts", str(PROMPTS),
                                   "--request-rate", str(RATE), "--seed", "7", "--workers", "2",
                                   "--num-warmups", "2"),
                          capture_output=True, text=True, timeout=180, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = MeasureResult.model_validate_json(out.read_text())
    assert (result.completed, result.failed) == (PROMPTS, 0)
    info = result.workers
    assert info is not None and (info.count, info.backend, info.chosen) == (2, "processes",
                                                                            "given")
    assert [w.requests for w in info.workers] == [PROMPTS // 2] * 2
    assert all(w.timing.clock == "kernel" for w in info.workers)
    # each worker's first request left at the common start (a 100 ms lead covers the start
    # message), and the release lag against the schedule is measured
    assert all(w.start_lag_ms is not None and w.start_lag_ms < 50 for w in info.workers)
    assert result.timing.max_release_lag_ms is not None
    # one file, every request once
    records = read_requests(requests_path(out))
    assert sorted(r.index for r in records) == list(range(PROMPTS))
    # released when the seeded schedule says, whichever worker sent it
    offsets = arrival_offsets(PROMPTS, RATE, 1.0, 7)
    by_index = {r.index: r for r in records}
    released = [(by_index[i].start_s or 0.0) * 1e3 - by_index[i].queue_ms
                for i in range(PROMPTS)]
    lateness = [(released[i] - released[0]) - (offsets[i] - offsets[0]) * 1e3
                for i in range(PROMPTS)]
    assert abs(statistics.median(lateness)) < 2.0, lateness
    assert max(map(abs, lateness)) < 25.0, lateness
    # and on the wire's truth
    assert abs(errors_vs_truth(requests_path(out), server.truth)["ttft"]) < 1.0
    assert "Workers (benchlib)" in proc.stdout and "worker 1" in proc.stdout


def _worker_pids(parent: int) -> list[int]:
    pids = []
    for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
        if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
            pids.append(int(child))
    return pids


def test_a_killed_worker_stops_the_run_and_keeps_the_records(
        scripted: Callable[..., ScriptedServerProcess], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "20", "--itl-ms", "20")
    out = tmp_path / "killed.json"
    proc = subprocess.Popen(_measure(server.url, out, tiny_model, "--num-prompts", "400",
                                     "--max-concurrency", "4", "--workers", "2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)
    log = requests_path(out)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not log.exists()
                                           or log.read_bytes().count(b"\n") < 10):
        time.sleep(0.1)
    pids = _worker_pids(proc.pid)
    assert len(pids) == 2, pids
    os.kill(pids[1], signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    assert "worker 1 of 2" in stderr and "exit code -9" in stderr and "Traceback" not in stderr
    kept = read_requests(log)
    assert len(kept) >= 10 and all(r.success for r in kept)
    assert not out.exists()  # no result claims a run that did not finish
