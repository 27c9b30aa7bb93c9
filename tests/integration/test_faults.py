"""Faults over real loopback sockets: each is recorded with a named cause and the run goes on.

The scripted server injects one fault kind (``--fault KIND:every=2``) or several at once; the
client must name every failed request's cause, keep measuring the others exactly (compared
with the server's truth file, request by request), write the result JSON and one JSONL line
per request, and exit 0 as long as one request succeeded. A SIGKILLed run keeps every
finished request's line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchlib.engines import free_port
from benchlib.measure import (
    MeasureConfig,
    MeasureResult,
    RequestRecord,
    measure,
    read_requests,
    requests_path,
)

from ._truth import load_jsonl

REPO = Path(__file__).resolve().parents[2]

#: fault kind → (the error every request it hits must carry, match by prefix?)
FAULT_ERRORS: dict[str, str] = {
    "http-500": "HTTP 500: scripted fault: internal server error",
    "http-429": "HTTP 429: scripted fault: too many requests",
    "json-body": "server answered with a JSON body, not an event stream "
                 "(content-type 'application/json')",
    "close-no-response": "connection closed by the server before responding",
    "reset": "connection reset by the server mid-response",
    "close-mid-stream": "connection closed by the server mid-response",
    "no-done": "stream ended without [DONE]",
    "bad-json": "SSE event #6 is not valid JSON: ",  # role chunk, 4 chunks, the bad one
    "error-event": "server error in stream: scripted fault: generation failed",
    "stall": "request timed out after 1.5 s",
}
OUTPUT_LEN = 8
TTFT_MS, ITL_MS = 10.0, 3.0


def run(server: Any, tmp_path: Path, tiny_model: Path, name: str, **kw: Any
        ) -> tuple[MeasureResult, list[RequestRecord]]:
    out = tmp_path / f"{name}.json"
    args: dict[str, Any] = dict(base_url=server.url, model="scripted", tokenizer=tiny_model,
                                endpoint="chat", input_len=16, output_len=OUTPUT_LEN,
                                num_prompts=6, max_concurrency=2, request_timeout=1.5,
                                result_json=out, disable_tqdm=True)
    args.update(kw)
    result = measure(MeasureConfig(**args))
    assert json.loads(out.read_text())["completed"] == result.completed
    return result, read_requests(requests_path(out))


def check_successes_against_truth(records: list[RequestRecord], truth_path: Path,
                                  ttft_tol_ms: float = 1.0) -> int:
    """Every successful request matches its truth row: tokens, chunks, TTFT and E2EL.

    After a multi-megabyte chunk the truth itself is late-blind: the client's receive buffer
    is full, so ``send`` returns once the bytes are in the server's send buffer, before they
    reach the client. Those requests' E2EL is not compared. E2EL's late bound is the write
    after the last content's: a client that read that content late read both at once.
    """
    truth = {t["id"]: t for t in load_jsonl(truth_path)}
    ok = [r for r in records if r.success]
    for r in ok:
        t = truth[r.response_id]
        writes = t["content_writes_ns"]
        assert r.output_tokens == t["completion_tokens"] == OUTPUT_LEN
        assert r.output_tokens_source == "usage"
        assert len(r.itl_text_only_ms) + r.coalesced_gaps == len(writes) - 1
        assert abs(r.ttft_ms - (writes[0] - t["arrival_ns"]) / 1e6) < ttft_tol_ms, r
        if t.get("fault") != "huge-chunk":
            # the last content read alone is stamped when it came; read late, together with
            # the write after it, it carries that write's stamp, never a later one
            true_e2el = (writes[-1] - t["arrival_ns"]) / 1e6
            latest = (max(writes[-1], t["tail_writes_ns"][0]) - t["arrival_ns"]) / 1e6
            assert true_e2el - ttft_tol_ms < r.e2el_ms < latest + ttft_tol_ms, (r, t)
    return len(ok)


@pytest.mark.parametrize("kind", sorted(FAULT_ERRORS))
def test_each_fault_is_named_and_the_run_goes_on(kind: str, scripted: Callable[..., Any],
                                                 tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                      "--fault", f"{kind}:every=2")
    result, records = run(server, tmp_path, tiny_model, kind)
    assert (result.completed, result.failed) == (3, 3), result.errors
    assert len(records) == 6 and sorted(r.index for r in records) == list(range(6))
    failed = [r for r in records if not r.success]
    for r in failed:
        assert r.error.startswith(FAULT_ERRORS[kind]), r.error
    assert check_successes_against_truth(records, server.truth) == 3
    faulted = [t for t in load_jsonl(server.truth) if t.get("fault") == kind]
    assert len(faulted) == 3


def test_huge_chunks_and_empty_choices_succeed(scripted: Callable[..., Any], tmp_path: Path,
                                               tiny_model: Path) -> None:
    # Ingesting and JSON-decoding a 2-MiB chunk holds the event loop for ~10-20 ms. A stream
    # whose next chunk arrives within that time is read late, and the kernel stamps its two
    # chunks as one: an ITL longer than the stall keeps every chunk distinct, hence 40 ms.
    size = 2 << 20
    server = scripted("--ttft-ms", str(TTFT_MS), "--itl-ms", "40",
                      "--fault", "huge-chunk:every=3", "--fault", "empty-choices",
                      "--huge-chunk-bytes", str(size))
    result, records = run(server, tmp_path, tiny_model, "shapes")
    assert result.completed == 6, result.errors
    assert check_successes_against_truth(records, server.truth) == 6
    huge = sorted(len(r.generated_text) for r in records)
    assert huge[-2] > size and huge[-3] < 100  # two requests carried one 2-MiB chunk


def test_mixed_faults_fail_named_and_the_rest_stay_exact(scripted: Callable[..., Any],
                                                         tmp_path: Path,
                                                         tiny_model: Path) -> None:
    kinds = ["http-500", "http-429", "reset", "close-mid-stream", "no-done", "bad-json",
             "error-event", "json-body", "close-no-response"]
    faults = [x for i, k in enumerate(kinds) for x in ("--fault", f"{k}:every=12:start={i + 1}")]
    server = scripted("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), *faults)
    result, records = run(server, tmp_path, tiny_model, "mixed", num_prompts=48,
                          max_concurrency=6)
    assert (result.completed, result.failed) == (12, 36)
    assert len(records) == 48
    causes: dict[str, int] = {}
    for r in records:
        if not r.success:
            kind = next(k for k in kinds if r.error.startswith(FAULT_ERRORS[k]))
            causes[kind] = causes.get(kind, 0) + 1
    assert causes == dict.fromkeys(kinds, 4)
    assert check_successes_against_truth(records, server.truth, ttft_tol_ms=2.0) == 12


def test_idle_connections_closed_by_the_server_are_not_used(scripted: Callable[..., Any],
                                                            tmp_path: Path,
                                                            tiny_model: Path) -> None:
    # uvicorn closes keep-alive connections idle for 5 s; pre-opened ones must not be used
    server = scripted("--ttft-ms", "2", "--itl-ms", "1", "--idle-timeout", "0.2")
    result, _ = run(server, tmp_path, tiny_model, "idle", num_prompts=4,
                    max_concurrency=None, request_rate=4.0, burstiness=float("inf"))
    assert result.completed == 4, result.errors


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlib", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO)


def measure_args(url: str, tiny_model: Path, out: Path, *extra: str) -> list[str]:
    return ["measure", "--base-url", url, "--model", "scripted", "--endpoint", "chat",
            "--tokenizer", str(tiny_model), "--input-len", "16", "--output-len",
            str(OUTPUT_LEN), "--result-json", str(out), "--disable-tqdm", *extra]


def test_cli_all_failed_exits_nonzero_naming_the_first_error(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--fault", "http-429")
    out = tmp_path / "all-failed.json"
    proc = cli(*measure_args(server.url, tiny_model, out, "--num-prompts", "5"))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    assert ("all 5 requests failed; first error: HTTP 429: scripted fault: too many requests"
            in proc.stderr)
    assert "5 × HTTP 429: scripted fault: too many requests" in proc.stdout
    assert json.loads(out.read_text())["failed"] == 5
    assert len(read_requests(requests_path(out))) == 5


def test_cli_some_failed_exits_zero_and_reports_causes(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--fault", "reset:every=2", "--fault", "stall:every=3:start=1")
    out = tmp_path / "some-failed.json"
    proc = cli(*measure_args(server.url, tiny_model, out, "--num-prompts", "6",
                             "--max-concurrency", "3", "--request-timeout", "1"))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    # requests 1 and 4 stall (4 is even, but the first rule that selects it wins: reset)
    assert "3 × connection reset by the server mid-response" in proc.stdout
    assert "1 × request timed out after 1 s" in proc.stdout
    saved = json.loads(out.read_text())
    assert (saved["completed"], saved["failed"]) == (2, 4)


def test_cli_connection_refused_is_named(tmp_path: Path, tiny_model: Path) -> None:
    port = free_port()
    out = tmp_path / "refused.json"
    proc = cli(*measure_args(f"http://127.0.0.1:{port}", tiny_model, out,
                             "--num-prompts", "3"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    assert f"first error: cannot connect to 127.0.0.1:{port}: Connection refused" in proc.stderr
    assert [r.error for r in read_requests(requests_path(out))] == [
        f"cannot connect to 127.0.0.1:{port}: Connection refused"] * 3


def test_sigkill_keeps_every_finished_request(scripted: Callable[..., Any], tmp_path: Path,
                                              tiny_model: Path) -> None:
    # a slow server: each request streams for ~0.25 s, 4 at a time, 200 requests (~12 s)
    server = scripted("--ttft-ms", "20", "--itl-ms", "25")
    out = tmp_path / "killed.json"
    jsonl = requests_path(out)
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlib", *measure_args(
            server.url, tiny_model, out, "--num-prompts", "200", "--max-concurrency", "4")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if jsonl.exists() and jsonl.read_bytes().count(b"\n") >= 20:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the run wrote no 20 lines in 60 s")
        os.kill(proc.pid, signal.SIGKILL)
        killed_ns = time.perf_counter_ns()  # CLOCK_MONOTONIC: the server's truth clock too
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()  # killed before the end: only the JSONL exists
    raw = jsonl.read_bytes()
    lines = raw.split(b"\n")
    whole = lines[:-1]  # the text after the last newline (if any) is a cut-off line
    for line in whole:
        json.loads(line)  # every complete line parses
    if lines[-1]:
        with pytest.raises(ValueError):
            json.loads(lines[-1])
    records = read_requests(jsonl)
    assert len(records) == len(whole) < 200
    assert all(r.success for r in records)
    ids = [r.response_id for r in records]
    assert len(set(ids)) == len(ids)
    # every request the server had finished well before the kill has its line
    time.sleep(0.3)
    truth = load_jsonl(server.truth)
    finished = {t["id"] for t in truth
                if t["content_writes_ns"][-1] < killed_ns - 200_000_000}
    assert finished and finished <= set(ids)
    assert set(ids) <= {t["id"] for t in truth}
