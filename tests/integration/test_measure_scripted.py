"""``benchlib measure`` against the scripted server: exact tokens, wire-accurate times.

The server runs in its own process and shares this machine's CPUs with the client, as an
engine would. Its truth file holds when each request's bytes arrived and when each chunk's
``send`` returned; the measured numbers are compared with that, not with the knobs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchlib.measure import (
    MeasureConfig,
    MeasureResult,
    TokenSources,
    measure,
    read_requests,
    requests_path,
)

from ._truth import bracket_coverage, errors_vs_truth, load_jsonl

VLLM_KEYS = {
    "completed", "failed", "duration", "total_input_tokens", "total_output_tokens",
    "request_throughput", "output_throughput", "total_token_throughput", "input_lens",
    "output_lens", "ttfts", "itls", "errors", "max_output_tokens_per_s",
    "max_concurrent_requests", "request_goodput", "max_concurrency", "request_rate",
    "burstiness", "num_prompts", "model_id", "date", "backend", "endpoint_type", "label",
    "tokenizer_id", "latencies", "start_times", "queue_times", "generated_texts", "rtfx",
}


def run(server: Any, tmp_path: Path, tiny_model: Path, **kw: Any) -> tuple[MeasureResult, Path]:
    out = tmp_path / f"run-{len(list(tmp_path.glob('run-*.json')))}.json"
    args: dict[str, Any] = dict(base_url=server.url, model="scripted", tokenizer=tiny_model,
                                input_len=32, output_len=20, num_prompts=20, max_concurrency=1,
                                result_json=out, disable_tqdm=True)
    args.update(kw)
    return measure(MeasureConfig(**args)), out


@pytest.mark.parametrize("concurrency,num_prompts,ttft_tol", [(1, 30, 0.5), (64, 256, 2.0)])
def test_ttft_and_tpot_match_the_wire(scripted: Callable[..., Any], tmp_path: Path,
                                      tiny_model: Path, concurrency: int, num_prompts: int,
                                      ttft_tol: float) -> None:
    server = scripted("--ttft-ms", "25", "--itl-ms", "8")
    result, out = run(server, tmp_path, tiny_model, max_concurrency=concurrency,
                      num_prompts=num_prompts, output_len=12, num_warmups=2)
    assert result.completed == num_prompts and result.clock == "kernel"
    err = errors_vs_truth(out.with_name(out.stem + ".requests.jsonl"), server.truth)
    assert abs(err["ttft"]) < ttft_tol, err
    assert abs(err["tpot"]) < 0.2, err
    assert (result.peak_concurrent_requests or 0) <= concurrency


def test_multi_token_chunks_are_not_tokens(scripted: Callable[..., Any], tmp_path: Path,
                                           tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "5", "--itl-ms", "4", "--tokens-per-chunk", "3")
    result, out = run(server, tmp_path, tiny_model, output_len=30, num_prompts=10,
                      max_concurrency=2)
    assert result.total_output_tokens == 300
    # TPOT per token, not per chunk: (E2EL − TTFT) / (tokens − 1), as on the wire
    err = errors_vs_truth(out.with_name(out.stem + ".requests.jsonl"), server.truth)
    assert abs(err["tpot"]) < 0.2, err
    assert result.mean_tokens_per_chunk == pytest.approx(3.0)
    assert result.output_tokens_source == TokenSources(usage=10, tokenizer=0)
    # per-token ITL spreads each chunk gap over its tokens (split by re-tokenizing, so a
    # tokenizer other than the server's splits unevenly; the mean still holds)
    assert result.mean_itl_ms is not None
    assert result.mean_itl_per_token_ms == pytest.approx(result.mean_itl_ms / 3, rel=0.1)


def test_timing_self_check_at_concurrency_1(scripted: Callable[..., Any], tmp_path: Path,
                                            tiny_model: Path) -> None:
    """One stream at a time: every TTFT is an exact kernel stamp, on the wire's truth.

    A shared 2-core VM now and then stalls both processes for 10–30 ms (steal time); the
    client then reads late, and says so (coalesced reads, ``client_bound``) with bounds that
    still hold the truth. That is checked on every attempt; exactness needs one quiet attempt
    of three."""
    server = scripted("--ttft-ms", "20", "--itl-ms", "5")
    seen = []
    for _ in range(3):
        result, out = run(server, tmp_path, tiny_model, max_concurrency=1, num_prompts=40,
                          output_len=8, num_warmups=2)
        timing = result.timing
        assert timing.clock == "kernel" and timing.stamped_read_fraction == 1.0
        jsonl = out.with_name(out.stem + ".requests.jsonl")
        # the truth lies between the server's send and its return (a stalled server widens
        # that, not the arrival); it meets the bounds whether or not the client kept up
        assert bracket_coverage(jsonl, server.truth, slack_ms=0.5) == 1.0
        seen.append(timing)
        if ((timing.exact_ttft_fraction or 0.0) >= 0.99 and timing.client_bound is False
                and timing.clock_stepped_requests == 0):
            assert abs(errors_vs_truth(jsonl, server.truth)["ttft"]) < 0.1
            return
    pytest.fail(f"no quiet attempt in 3: {seen}")


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_counts_in_ttft_and_tokens(scripted: Callable[..., Any], tmp_path: Path,
                                             tiny_model: Path, field: str) -> None:
    server = scripted("--ttft-ms", "15", "--itl-ms", "5", "--reasoning-tokens", "6",
                      "--reasoning-field", field)
    result, out = run(server, tmp_path, tiny_model, endpoint="chat", output_len=10,
                      num_prompts=5)
    assert result.total_output_tokens == 50
    err = errors_vs_truth(out.with_name(out.stem + ".requests.jsonl"), server.truth)
    assert abs(err["ttft"]) < 0.5  # the first reasoning chunk ends TTFT, not the role chunk
    rec = read_requests(requests_path(out))[0]
    assert rec.reasoning_text.count(" ") == 6 and rec.generated_text.count(" ") == 4


def test_missing_usage_falls_back_to_the_tokenizer(scripted: Callable[..., Any],
                                                   tmp_path: Path, tiny_model: Path,
                                                   tokenizer: Any) -> None:
    server = scripted("--ttft-ms", "1", "--itl-ms", "1", "--no-usage")
    result, out = run(server, tmp_path, tiny_model, num_prompts=3)
    rec = read_requests(requests_path(out))[0]
    assert rec.output_tokens_source == "tokenizer"
    assert rec.output_tokens == len(tokenizer(rec.generated_text,
                                                 add_special_tokens=False)["input_ids"])
    assert result.output_tokens_source == TokenSources(usage=0, tokenizer=3)


def test_request_rate_and_result_files(scripted: Callable[..., Any], tmp_path: Path,
                                       tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "2", "--itl-ms", "1")
    result, out = run(server, tmp_path, tiny_model, num_prompts=20, max_concurrency=None,
                      request_rate=100.0, burstiness=0.5, goodput={"ttft": 1000.0})
    saved = json.loads(out.read_text())
    assert saved.keys() >= VLLM_KEYS
    for stat in ("mean", "median", "std", "p50", "p90", "p95", "p99"):
        for metric in ("ttft", "tpot", "itl", "e2el"):
            assert f"{stat}_{metric}_ms" in saved
    assert saved["request_goodput"] == pytest.approx(saved["request_throughput"])
    assert len(load_jsonl(out.with_name(out.stem + ".requests.jsonl"))) == 20
    assert result.errors == [""] * 20


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "benchlib", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_cli_end_to_end_and_api_key_is_never_written(scripted: Callable[..., Any],
                                                     tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "3", "--itl-ms", "1")
    secret = "sk-benchlib-planted-4f9a"
    out = tmp_path / "cli.json"
    proc = cli("measure", "--base-url", server.url, "--model", "scripted", "--endpoint", "chat",
               "--dataset", "random", "--input-len", "16", "--output-len", "4",
               "--num-prompts", "4", "--max-concurrency", "2", "--tokenizer", str(tiny_model),
               "--seed", "1", "--result-json", str(out), "--disable-tqdm",
               env={"OPENAI_API_KEY": secret})
    assert proc.returncode == 0, proc.stderr
    assert "Serving Benchmark Result" in proc.stdout and "Median TTFT (ms):" in proc.stdout
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.name.startswith("cli"):
            assert secret not in path.read_text()
    assert secret not in proc.stdout + proc.stderr


def test_no_usage_and_no_tokenizer_refuses_to_start(scripted: Callable[..., Any],
                                                    tmp_path: Path) -> None:
    """Output tokens could not be known: the run refuses before sending the load (exit 2,
    naming --tokenizer), instead of reporting 0 tokens and a met TPOT SLO."""
    server = scripted("--ttft-ms", "1", "--itl-ms", "1", "--no-usage")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "hello there"}\n' * 3)
    out = tmp_path / "nousage.json"
    proc = cli("measure", "--base-url", server.url, "--model", "scripted", "--dataset", "file",
               "--dataset-path", str(prompts), "--output-len", "4", "--num-prompts", "3",
               "--result-json", str(out), "--disable-tqdm")
    assert proc.returncode == 2, proc.stderr
    assert "--tokenizer" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()
    with_usage = scripted("--ttft-ms", "1", "--itl-ms", "1")
    proc = cli("measure", "--base-url", with_usage.url, "--model", "scripted", "--dataset",
               "file", "--dataset-path", str(prompts), "--output-len", "4", "--num-prompts",
               "3", "--result-json", str(out), "--disable-tqdm")
    assert proc.returncode == 0, proc.stderr  # usage is enough
    assert json.loads(out.read_text())["total_output_tokens"] == 12


def test_connection_refused_is_a_message_not_a_traceback(tmp_path: Path,
                                                         tiny_model: Path) -> None:
    out = tmp_path / "refused.json"
    proc = cli("measure", "--base-url", "http://127.0.0.1:9", "--model", "m",
               "--tokenizer", str(tiny_model), "--input-len", "8", "--output-len", "2",
               "--num-prompts", "3", "--result-json", str(out), "--disable-tqdm")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "cannot connect" in proc.stderr
    assert json.loads(out.read_text())["failed"] == 3
    assert len(load_jsonl(tmp_path / "refused.requests.jsonl")) == 3


@pytest.mark.parametrize("args,field", [
    (["--max-concurrency", "0"], "--max-concurrency"),
    (["--num-prompts", "-1"], "--num-prompts"),
    (["--base-url", "localhost:8000"], "--base-url"),
    (["--goodput", "ttft=5"], "--goodput"),
    (["--metric-percentiles", "50,abc"], "--metric-percentiles"),
    (["--tokenizer", "/nonexistent/tok"], "--tokenizer"),
    (["--dataset", "file"], "--dataset-path"),
])
def test_bad_flags_exit_2_naming_the_field(args: list[str], field: str,
                                           tiny_model: Path) -> None:
    base = {"--base-url": "http://127.0.0.1:9", "--model": "m", "--tokenizer": str(tiny_model)}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    proc = cli("measure", *[x for kv in base.items() for x in kv])
    assert proc.returncode == 2, proc.stderr
    assert field in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(("close_ms", "concurrency"), [("0", 1), ("0", 4), ("5", 4)])
def test_a_server_that_closes_after_each_stream_fails_no_request(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path, close_ms: str,
        concurrency: int) -> None:
    """llama-server closes every connection after a streamed response although its headers
    allow keep-alive; a pool that reused them would lose requests to the race (a close 5 ms
    late is learned while the warmup settles)."""
    server = scripted("--ttft-ms", "1", "--itl-ms", "1", "--close-after-stream", close_ms)
    result, _ = run(server, tmp_path, tiny_model, output_len=4, num_prompts=40,
                    max_concurrency=concurrency, num_warmups=1)
    assert result.completed == 40 and result.failed == 0, result.errors


def test_the_text_dataset_end_to_end(scripted: Callable[..., Any], tmp_path: Path,
                                     tiny_model: Path) -> None:
    """Real-text prompts through the whole measurement: the same counts ``random`` draws
    for the seed, each request's prompt exactly that long, recorded in the settings."""
    server = scripted("--ttft-ms", "5", "--itl-ms", "2")
    result, out = run(server, tmp_path, tiny_model, dataset="text", endpoint="chat",
                      num_prompts=6, input_len=120, random_range_ratio=0.3, seed=4)
    assert result.completed == 6 and result.benchlib.dataset == "text"
    lens = [r.prompt_len for r in read_requests(requests_path(out))]
    same, again = run(server, tmp_path, tiny_model, num_prompts=6, input_len=120,
                      random_range_ratio=0.3, seed=4)
    assert same.completed == 6 and same.benchlib.dataset == "random"
    assert sorted(lens) == sorted(r.prompt_len for r in read_requests(requests_path(again)))
    assert result.total_input_tokens_dataset == sum(lens) and len(set(lens)) > 1
    # the text's shared prefixes are counted and kept (random token ids: not counted)
    share = result.benchlib.prompt_prefix_share
    assert share is not None and share.prompts == 6 and share.block == 16
    assert "assumed" in share.block_from  # no engine's unit given: vLLM's GPU default
    assert 0 <= share.sharing <= 6 and share.total_tokens >= sum(lens) // 2
    assert json.loads(out.read_text())["benchlib"]["prompt_prefix_share"]["prompts"] == 6
    assert same.benchlib.prompt_prefix_share is None
    # in the engine's own unit where it is given (03_measure: prefix_unit)
    unit, _ = run(server, tmp_path, tiny_model, dataset="text", endpoint="chat",
                  num_prompts=6, input_len=120, random_range_ratio=0.3, seed=4,
                  prefix_block=1, prefix_block_from="SGLang's default --page-size 1")
    one = unit.benchlib.prompt_prefix_share
    assert one is not None and (one.block, one.block_from) == (
        1, "SGLang's default --page-size 1")
    assert one.cacheable_tokens >= share.cacheable_tokens


def test_a_scripted_server_marks_its_results_synthetic(scripted: Callable[..., Any],
                                                       tmp_path: Path, tiny_model: Path) -> None:
    """The scripted server says so in a header; the result (and its console block) carry it,
    so canned timings are never taken for an engine's."""
    server = scripted("--ttft-ms", "5", "--itl-ms", "1")
    result, out = run(server, tmp_path, tiny_model, num_prompts=2, output_len=4)
    assert result.synthetic is True
    assert json.loads(out.read_text())["synthetic"] is True
    console = subprocess.run(
        [sys.executable, "-m", "benchlib", "measure", "--base-url", server.url, "--model",
         "scripted", "--tokenizer", str(tiny_model), "--input-len", "8", "--output-len", "4",
         "--num-prompts", "2", "--disable-tqdm"], capture_output=True, text=True,
        check=True).stdout
    assert "SYNTHETIC: benchlib's scripted server answered" in console
