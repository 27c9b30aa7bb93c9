"""1,024 concurrent streams on the 2-core machine: no client-side error, times still exact.

Both processes start with a soft open-file limit of 1024 (the common default), which 1,024
sockets plus the usual descriptors exceed: the client and the scripted server must raise it
themselves (up to the hard limit). The pool opens its 1,024 connections at once, bounded so
the listen backlog does not overflow.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlib.measure import MeasureResult, read_requests, requests_path

from ._truth import bracket_coverage, load_jsonl

REPO = Path(__file__).resolve().parents[2]
STREAMS = 1024


def _soft_1024() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))


def _server(tmp_path: Path, ttft_ms: str, itl_ms: str) -> Iterator[tuple[str, Path]]:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < STREAMS + 200:
        pytest.skip(f"the hard open-file limit ({hard}) is below {STREAMS} streams")
    truth = tmp_path / "truth.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlib", "scripted-server", "--port", "0", "--truth",
         str(truth), "--ttft-ms", ttft_ms, "--itl-ms", itl_ms],
        stdout=subprocess.PIPE, text=True, cwd=REPO, preexec_fn=_soft_1024)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("listening on "), line
    try:
        yield line.split()[-1], truth
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    yield from _server(tmp_path, "150", "25")


@pytest.fixture
def fast_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    yield from _server(tmp_path, "100", "2")


def _measure(url: str, out: Path, tiny_model: Path, *, output_len: int, num_prompts: int
             ) -> tuple[MeasureResult, str]:
    """``benchlib measure`` at :data:`STREAMS` streams in one process (what one process
    does is the point here: worker processes are tests/integration/test_workers.py's) with a
    soft limit of 1024 open files; the result JSON and the console."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchlib", "measure", "--base-url", url, "--model", "scripted",
         "--tokenizer", str(tiny_model), "--input-len", "16", "--output-len", str(output_len),
         "--num-prompts", str(num_prompts), "--max-concurrency", str(STREAMS),
         "--result-json", str(out), "--disable-tqdm", "--workers", "1"],
        capture_output=True, text=True, timeout=180, cwd=REPO, preexec_fn=_soft_1024)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return MeasureResult.model_validate_json(out.read_text()), proc.stdout


@pytest.mark.parametrize("num_prompts", [STREAMS, 2 * STREAMS])
def test_1024_concurrent_streams(server: tuple[str, Path], tmp_path: Path, tiny_model: Path,
                                 num_prompts: int) -> None:
    url, truth = server
    out = tmp_path / "load.json"
    result, _ = _measure(url, out, tiny_model, output_len=12, num_prompts=num_prompts)
    assert result.errors == [""] * num_prompts
    assert (result.completed, result.failed) == (num_prompts, 0)
    assert result.peak_concurrent_requests == STREAMS  # all 1,024 really were in flight
    assert result.total_output_tokens == 12 * num_prompts
    # and still on the wire's truth: median TTFT error per request well under a millisecond
    rows = {t["id"]: t for t in load_jsonl(truth)}
    errors = []
    for r in read_requests(requests_path(out)):
        t = rows[r.response_id]
        errors.append(r.ttft_ms - (t["content_writes_ns"][0] - t["arrival_ns"]) / 1e6)
    assert len(errors) == num_prompts
    assert abs(statistics.median(errors)) < 1.0, statistics.median(errors)


def test_1024_streams_2ms_apart_bound_every_ttft(fast_server: tuple[str, Path],
                                                  tmp_path: Path, tiny_model: Path) -> None:
    """More chunks per second than one process reads promptly: events merge into one read,
    so stamps become bounds. The truth must lie inside them, and the run must say it was
    client-bound, on the console too."""
    url, truth = fast_server
    out = tmp_path / "fast.json"
    result, console = _measure(url, out, tiny_model, output_len=24, num_prompts=STREAMS)
    assert result.completed == STREAMS
    assert bracket_coverage(requests_path(out), truth, slack_ms=0.2) >= 0.99
    timing = result.timing
    assert timing.client_bound is True and (timing.p99_read_lag_ms or 0.0) > 1.0, timing
    # judged on what the merged reads could move: the first text's TTFT, by over 1 %
    assert max(timing.client_bound_figures.values()) > timing.client_bound_share_limit
    assert timing.client_bound_figures.get("median_ttft_text_ms", 0.0) > 0.01, timing
    assert "client-bound" in console and "could move by more than 1%" in console
    # a gap between two events of one read is never reported as an ITL
    records = read_requests(requests_path(out))
    assert sum(r.coalesced_gaps for r in records) == timing.coalesced_gaps > 0
    assert all(len(r.itl_text_only_ms) + r.coalesced_gaps == 23 for r in records)
