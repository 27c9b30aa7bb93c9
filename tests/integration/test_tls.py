"""``benchlib measure`` over TLS against the scripted server serving HTTPS with a self-signed
certificate: the same wire accuracy as plain HTTP (compared with the server's truth, whose
times are those of the ciphertext's ``send``), a certificate nobody trusts stops the run at
once saying what to do, ``--insecure`` measures anyway, extra headers reach the server and
their values are never printed or written, and faults, keep-alive and servers that close
after every response behave as over plain TCP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchlib.measure import MeasureConfig, MeasureResult, measure
from benchlib.measure.wire._endpoint import Endpoint
from benchlib.measure.wire._pool import ConnectionPool
from benchlib.pipeline import read_sidecar
from tests._runs import run_day
from tests._tls_files import TlsFiles
from tests.conftest import REPO

from ._truth import bracket_coverage, errors_vs_truth, load_jsonl
from .test_faults import FAULT_ERRORS
from .test_pool import _request


@pytest.fixture
def https(scripted: Callable[..., Any], tls_files: TlsFiles) -> Callable[..., Any]:
    """Factory: the scripted server serving HTTPS with the self-signed certificate."""

    def start(*args: str) -> Any:
        server = scripted(*tls_files.server_args(), *args)
        assert server.url.startswith("https://")
        return server

    return start


def run(server: Any, tmp_path: Path, tiny_model: Path, tls_files: TlsFiles, **kw: Any
        ) -> tuple[MeasureResult, Path]:
    out = tmp_path / f"run-{len(list(tmp_path.glob('run-*.json')))}.json"
    args: dict[str, Any] = dict(base_url=server.url, model="scripted", tokenizer=tiny_model,
                                input_len=32, output_len=20, num_prompts=20, max_concurrency=1,
                                result_json=out, disable_tqdm=True, ca_bundle=tls_files.cert)
    args.update(kw)
    return measure(MeasureConfig(**args)), out


def _jsonl(out: Path) -> Path:
    return out.with_name(out.stem + ".requests.jsonl")


@pytest.mark.parametrize("concurrency,num_prompts,ttft_tol", [(1, 30, 0.5), (64, 256, 2.0)])
def test_ttft_and_tpot_match_the_wire_over_tls(https: Callable[..., Any], tmp_path: Path,
                                               tiny_model: Path, tls_files: TlsFiles,
                                               concurrency: int, num_prompts: int,
                                               ttft_tol: float) -> None:
    server = https("--ttft-ms", "25", "--itl-ms", "8")
    result, out = run(server, tmp_path, tiny_model, tls_files, max_concurrency=concurrency,
                      num_prompts=num_prompts, output_len=12, num_warmups=2)
    assert result.completed == num_prompts and result.clock == "kernel"
    err = errors_vs_truth(_jsonl(out), server.truth)
    assert abs(err["ttft"]) < ttft_tol, err
    assert abs(err["tpot"]) < 0.2, err
    assert (result.peak_concurrent_requests or 0) <= concurrency


def test_timing_self_check_at_concurrency_1_over_tls(https: Callable[..., Any], tmp_path: Path,
                                                     tiny_model: Path,
                                                     tls_files: TlsFiles) -> None:
    """One stream at a time over TLS: every TTFT an exact kernel stamp, on the wire's truth,
    as over plain HTTP (test_measure_scripted's twin: bounds hold the truth on every attempt,
    exactness needs one quiet attempt of five on a shared VM: decrypting costs the client
    more per read than plain HTTP, so a busy machine leaves it client-bound more often)."""
    server = https("--ttft-ms", "20", "--itl-ms", "5")
    seen = []
    for _ in range(5):
        result, out = run(server, tmp_path, tiny_model, tls_files, max_concurrency=1,
                          num_prompts=40, output_len=8, num_warmups=2)
        timing = result.timing
        assert timing.clock == "kernel" and timing.stamped_read_fraction == 1.0
        assert bracket_coverage(_jsonl(out), server.truth, slack_ms=0.5) == 1.0
        seen.append(timing)
        if ((timing.exact_ttft_fraction or 0.0) >= 0.99 and timing.client_bound is False
                and timing.clock_stepped_requests == 0):
            assert abs(errors_vs_truth(_jsonl(out), server.truth)["ttft"]) < 0.1
            return
    pytest.fail(f"no quiet attempt in 5: {seen}")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlib", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def measure_args(url: str, tiny_model: Path, out: Path, *extra: str) -> list[str]:
    return ["measure", "--base-url", url, "--model", "scripted", "--endpoint", "chat",
            "--tokenizer", str(tiny_model), "--input-len", "16", "--output-len", "4",
            "--num-prompts", "4", "--max-concurrency", "2", "--result-json", str(out),
            "--disable-tqdm", *extra]


def test_an_untrusted_certificate_stops_the_run_saying_what_to_do(
        https: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = https("--ttft-ms", "1", "--itl-ms", "1", "--host", "0.0.0.0")
    port = server.url.rsplit(":", 1)[1]
    out = tmp_path / "untrusted.json"
    proc = cli(*measure_args(f"https://127.0.0.1:{port}", tiny_model, out))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "not trusted" in proc.stderr and "self-signed" in proc.stderr
    assert "--ca-bundle" in proc.stderr and "--insecure" in proc.stderr
    assert not out.exists() and not load_jsonl_or_empty(server.truth)  # nothing was sent
    # a name the certificate does not hold fails the same way, even with its CA trusted
    proc = cli(*measure_args(f"https://127.0.0.2:{port}", tiny_model, out,
                             "--ca-bundle", str(_cert(server))))
    assert proc.returncode == 2 and "--insecure" in proc.stderr, proc.stderr
    assert "127.0.0.2" in proc.stderr


def _cert(server: Any) -> Path:
    args = server.proc.args
    return Path(args[args.index("--tls-cert") + 1])


def load_jsonl_or_empty(path: Path) -> list[dict[str, Any]]:
    return load_jsonl(path) if path.exists() else []


def test_insecure_measures_without_checking(https: Callable[..., Any], tmp_path: Path,
                                            tiny_model: Path) -> None:
    server = https("--ttft-ms", "1", "--itl-ms", "1")
    out = tmp_path / "insecure.json"
    proc = cli(*measure_args(server.url, tiny_model, out, "--insecure"))
    assert proc.returncode == 0, proc.stderr
    saved = json.loads(out.read_text())
    assert saved["completed"] == 4 and saved["benchlib"]["base_url"] == server.url


def test_https_to_a_plain_http_server_stops_the_run(scripted: Callable[..., Any],
                                                    tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "1", "--itl-ms", "1")
    out = tmp_path / "plain.json"
    proc = cli(*measure_args(server.url.replace("http://", "https://"), tiny_model, out,
                             "--insecure"))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "TLS" in proc.stderr, proc.stderr


def test_headers_reach_the_server_and_their_values_are_never_written(
        https: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    """A proxy's token and a hosted API's key as headers: the server gets them (it answers
    401 without), ``Authorization`` replaces the one ``$OPENAI_API_KEY`` would make, and no
    value is printed or written, the server's truth file included (names only)."""
    token, bearer, api_key = "tok-planted-5e1d", "Bearer sk-planted-a77c", "sk-env-planted-90b"
    server = https("--ttft-ms", "2", "--itl-ms", "1", "--require-header", f"X-Team-Token: {token}",
                   "--require-header", f"Authorization: {bearer}")
    out = tmp_path / "headers.json"
    proc = cli(*measure_args(server.url, tiny_model, out, "--ca-bundle", str(_cert(server)),
                             "--header", f"X-Team-Token: {token}",
                             "--header", f"Authorization: {bearer}"),
               env={"OPENAI_API_KEY": api_key})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["completed"] == 4
    rows = load_jsonl(server.truth)
    assert len(rows) == 4
    for row in rows:
        assert row["headers"].count("authorization") == 1 and "x-team-token" in row["headers"]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            assert "planted" not in text, path
    assert "planted" not in proc.stdout + proc.stderr
    # without the token the server refuses every request: the header is what got through
    proc = cli(*measure_args(server.url, tiny_model, tmp_path / "no-token.json",
                             "--ca-bundle", str(_cert(server)),
                             "--header", f"Authorization: {bearer}"))
    assert proc.returncode == 1 and "HTTP 401" in proc.stderr, proc.stderr
    assert "planted" not in proc.stdout + proc.stderr


def test_faults_over_tls_are_named_and_the_rest_stay_exact(
        https: Callable[..., Any], tmp_path: Path, tiny_model: Path,
        tls_files: TlsFiles) -> None:
    """test_faults' mixed run over TLS: a cut without close_notify, a reset, an early close
    all end with the same named errors as over plain TCP, and a request sent right behind a
    new connection's handshake (its bytes in the server's last handshake read) is served."""
    kinds = ["http-500", "reset", "close-mid-stream", "no-done", "bad-json", "error-event",
             "close-no-response"]
    faults = [x for i, k in enumerate(kinds) for x in ("--fault", f"{k}:every=8:start={i + 1}")]
    server = https("--ttft-ms", "10", "--itl-ms", "3", *faults)
    result, out = run(server, tmp_path, tiny_model, tls_files, endpoint="chat", input_len=16,
                      output_len=8, num_prompts=32, max_concurrency=4, request_timeout=5.0)
    assert (result.completed, result.failed) == (4, 28), result.errors
    from benchlib.measure import read_requests

    records = read_requests(_jsonl(out))
    causes: dict[str, int] = {}
    for r in records:
        if not r.success:
            kind = next(k for k in kinds if r.error.startswith(FAULT_ERRORS[k]))
            causes[kind] = causes.get(kind, 0) + 1
    assert causes == dict.fromkeys(kinds, 4)
    # each cut costs a new connection, so handshakes run on the client's loop during the
    # load (a CPU stall the plain-TCP twin does not have): the bounds must hold the truth
    assert bracket_coverage(_jsonl(out), server.truth, slack_ms=0.5) == 1.0
    ok = [r for r in records if r.success]
    assert [r.output_tokens for r in ok] == [8] * 4 and all(r.clock == "kernel" for r in ok), [
        r.clock for r in ok]


@pytest.mark.parametrize(("close_ms", "concurrency"), [("0", 4), ("5", 4)])
def test_a_tls_server_that_closes_after_each_stream_fails_no_request(
        https: Callable[..., Any], tmp_path: Path, tiny_model: Path, tls_files: TlsFiles,
        close_ms: str, concurrency: int) -> None:
    server = https("--ttft-ms", "1", "--itl-ms", "1", "--close-after-stream", close_ms)
    result, _ = run(server, tmp_path, tiny_model, tls_files, output_len=4, num_prompts=40,
                    max_concurrency=concurrency, num_warmups=1)
    assert result.completed == 40 and result.failed == 0, result.errors


def test_a_close_read_with_the_answers_end_is_learned(https: Callable[..., Any],
                                                      tls_files: TlsFiles) -> None:
    """A server's close_notify read in one go with its last chunk (a busy client reads late)
    closes the connection inside the request: that is the server closing after every
    response, learned as a close found on release is."""
    server = https("--ttft-ms", "1", "--itl-ms", "1", "--close-after-stream", "0")

    async def go() -> ConnectionPool:
        pool = ConnectionPool(Endpoint.parse(server.url, ca_bundle=tls_files.cert), 1, 5.0)
        await pool.open()
        # the loop stalls once the request is out: the answer and the close wait in the
        # socket and come in one read (a server slower than that is caught on release)
        asyncio.get_running_loop().call_soon(time.sleep, 0.3)
        capture, served = await _request(pool)
        assert capture.status == 200 and not capture.error and served == 1, capture.error
        pool.close()
        return pool

    assert asyncio.run(go()).server_closes


def test_keep_alive_over_tls_uses_one_connection(https: Callable[..., Any],
                                                 tls_files: TlsFiles) -> None:
    """The session tickets a TLS 1.3 server sends after the handshake wait, unread, in an
    idle connection's socket: they are not taken for a hang-up."""
    server = https("--ttft-ms", "1", "--itl-ms", "1")

    async def go() -> list[int]:
        pool = ConnectionPool(Endpoint.parse(server.url, ca_bundle=tls_files.cert), 1, 5.0)
        await pool.open()
        await asyncio.sleep(0.05)
        served = []
        for _ in range(5):
            capture, n = await _request(pool)
            assert capture.status == 200 and not capture.error, capture.error
            served.append(n)
        await pool.settle()
        assert not pool.server_closes
        pool.close()
        return served

    assert asyncio.run(go()) == [1, 2, 3, 4, 5]


def test_a_recipe_measures_an_https_endpoint(https: Callable[..., Any], tmp_path: Path,
                                             tiny_model: Path, tls_files: TlsFiles) -> None:
    """A hosted API or a TLS proxy as a recipe's engine: the readiness and 1-token checks,
    the fair-A/B probe, the openai SDK's checks and view and the measurement all trust the
    recipe's CA bundle; without it the launch fails saying the certificate is not trusted."""
    server = https("--ttft-ms", "5", "--itl-ms", "2", "--model", "scripted")

    def recipe(name: str, tls: str) -> Path:
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"""\
name: {name}
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: endpoint, base_url: "{server.url}"{tls}}}
steps: [02_launch, 03_measure]
scenarios:
  - {{name: chat, endpoint: chat, input_len: 16, output_len: 8, concurrencies: [2],
      num_prompts: 4, sdk_view: true}}
""")
        return path

    out = tmp_path / "out"
    ok = subprocess.run([sys.executable, "-m", "benchlib", "run",
                         str(recipe("tls", f', ca_bundle: "{tls_files.cert}"')), "--outputs",
                         str(out)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    run = run_day(out) / "tls"
    launch = read_sidecar(run / "02_launch.json").results
    # the chat reached the server over TLS and came back (the scripted words are no answer)
    assert launch["base_url"] == server.url and all(
        c["error"] is None and c["content_chars"] > 0 for c in launch["checks"])
    measured = read_sidecar(run / "03_measure.json")
    assert measured.status == "ok", measured.error
    result = MeasureResult.model_validate_json((run / "measure" / "chat-c2.json").read_text())
    assert result.completed == 4 and result.timing.clock == "kernel"
    assert result.benchlib.base_url == server.url
    bad = subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe("untrusted", "")),
                          "--outputs", str(out)], capture_output=True, text=True, cwd=REPO,
                         timeout=600)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    failed = read_sidecar(out / run.parent.name / "untrusted" / "02_launch.json")
    assert failed.status == "failed" and failed.error is not None
    assert "certificate verify failed" in failed.error.evalue
    assert "engine.ca_bundle" in failed.error.evalue
