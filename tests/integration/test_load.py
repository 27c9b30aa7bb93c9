"""1,024 concurrent streams on the 2-core machine: no client-side error, times still exact.

Both processes start with a soft open-file limit of 1024 (the common default), which 1,024
sockets plus the usual descriptors exceed: the client and the scripted server must raise it
themselves (up to the hard limit). The pool opens its 1,024 connections at once, bounded so
the listen backlog does not overflow.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlib.measure import read_requests, requests_path

from ._truth import load_jsonl

REPO = Path(__file__).resolve().parents[2]
STREAMS = 1024


def _soft_1024() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < STREAMS + 200:
        pytest.skip(f"the hard open-file limit ({hard}) is below {STREAMS} streams")
    truth = tmp_path / "truth.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlib", "scripted-server", "--port", "0", "--truth",
         str(truth), "--ttft-ms", "150", "--itl-ms", "25"],
        stdout=subprocess.PIPE, text=True, cwd=REPO, preexec_fn=_soft_1024)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("listening on "), line
    try:
        yield line.split()[-1], truth
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("num_prompts", [STREAMS, 2 * STREAMS])
def test_1024_concurrent_streams(server: tuple[str, Path], tmp_path: Path, tiny_model: Path,
                                 num_prompts: int) -> None:
    url, truth = server
    out = tmp_path / "load.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchlib", "measure", "--base-url", url, "--model", "scripted",
         "--tokenizer", str(tiny_model), "--input-len", "16", "--output-len", "12",
         "--num-prompts", str(num_prompts), "--max-concurrency", str(STREAMS),
         "--result-json", str(out), "--disable-tqdm"],
        capture_output=True, text=True, timeout=120, cwd=REPO, preexec_fn=_soft_1024)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["errors"] == [""] * num_prompts
    assert (result["completed"], result["failed"]) == (num_prompts, 0)
    assert result["max_concurrent_requests"] == STREAMS  # all 1,024 really were in flight
    assert result["total_output_tokens"] == 12 * num_prompts
    # and still on the wire's truth: median TTFT error per request well under a millisecond
    rows = {t["id"]: t for t in load_jsonl(truth)}
    errors = []
    for r in read_requests(requests_path(out)):
        t = rows[r["response_id"]]
        errors.append(r["ttft_ms"] - (t["content_writes_ns"][0] - t["arrival_ns"]) / 1e6)
    assert len(errors) == num_prompts
    assert abs(statistics.median(errors)) < 1.0, statistics.median(errors)
