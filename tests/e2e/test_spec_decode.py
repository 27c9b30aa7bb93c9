"""Speculative decoding for real: vLLM's CPU build with n-gram drafts on the tiny model,
measured by benchlib at concurrency 1 with the metrics sampler around it, and the client's
chunks and tokens held to the server's counters (2 %).

A random-weight model under greedy decoding repeats itself, so n-gram drafts are accepted
often (about 2.9 tokens per chunk here, 72–75 % of the draft tokens). The warmups run before the sampler starts, so the
server's counters cover the timed requests only. ``BENCHLIB_CAPTURE_METRICS=PATH`` also
writes the engine's full ``/metrics`` text at the end (how
``tests/data/metrics/vllm-0.32-ngram.txt`` was made).
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from benchlib.adapters import adapter
from benchlib.engines import EngineProcess, lower_priority, plan_launch
from benchlib.measure import (
    ClientStreams,
    MeasureConfig,
    MetricNames,
    MetricsSampler,
    measure,
    read_requests,
    requests_path,
    spec_decode_report,
)
from benchlib.recipe import EngineSpec, ModelSpec

pytestmark = pytest.mark.e2e
N, INPUT_LEN, OUTPUT_LEN, K = 8, 64, 256, 4
#: vLLM 0.32's n-gram keys (vllm/config/speculative.py)
_VLLM_NAMES = adapter("vllm").metrics
assert _VLLM_NAMES is not None
VLLM_NAMES: MetricNames = _VLLM_NAMES
SPEC_CONFIG = {"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_max": 4,
               "prompt_lookup_min": 2}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[EngineProcess, Path, str]]:
    """The engine (its own process group, stopped at the end), the model, its base URL."""
    python, model = (os.environ.get("BENCHLIB_ENGINE_PYTHON"),
                     os.environ.get("BENCHLIB_TINY_MODEL"))
    if not python or not model:
        pytest.skip("set BENCHLIB_ENGINE_PYTHON (make engine) and BENCHLIB_TINY_MODEL "
                    "(make model)")
    if not Path(python).exists() or not (Path(model) / "config.json").is_file():
        pytest.fail(f"engine python {python} or tiny model {model} is missing")
    spec = EngineSpec(kind="vllm", python=Path(python),
                      args=["--dtype", "bfloat16", "-O0", "--speculative-config",
                            json.dumps(SPEC_CONFIG)],
                      env={"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "0"},
                      max_model_len=2048)
    plan = plan_launch(spec, ModelSpec(id="tiny-llama"), Path(model))
    server = EngineProcess(plan.resolved_argv(), env=plan.env, ready_url=plan.ready_url,
                           log_path=tmp_path_factory.mktemp("engine") / "vllm.log")
    with server:
        assert server.pgid is not None  # the demo recipe's engine.nice (see params/demo.yaml)
        assert lower_priority(server.pgid, {"VLLM::EngineCore": 10})["VLLM::EngineCore"]
        yield server, Path(model), plan.base_url
    assert server.proc is not None and server.proc.poll() is not None


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_client_chunks_reconcile_with_the_servers_counters(
        engine: tuple[EngineProcess, Path, str], tmp_path: Path, endpoint: Literal["completions", "chat"]) -> None:
    _, model, url = engine

    def run(n: int, name: str) -> Path:
        result_json = tmp_path / f"{name}.json"
        measure(MeasureConfig(
            base_url=url, model="tiny-llama", endpoint=endpoint, tokenizer=model,
            dataset="random", input_len=INPUT_LEN, output_len=OUTPUT_LEN, num_prompts=n,
            max_concurrency=1, num_warmups=0, seed=0, disable_tqdm=True,
            result_json=result_json))
        return result_json

    run(2, "warmup")  # warm the engine outside the counters' window
    with MetricsSampler(url, VLLM_NAMES, interval_s=0.5) as sampler:
        result_json = run(N, "timed")
    metrics = sampler.result
    assert metrics is not None
    client = ClientStreams.from_records(read_requests(requests_path(result_json)), endpoint)
    report = spec_decode_report(metrics, client, max_concurrency=1, names=VLLM_NAMES)
    s, r = report.server, report.reconciliation
    print(f"\n{endpoint}: {client.output_tokens} tokens in {client.chunks} chunks "
          f"({client.tokens_per_chunk:.2f}/chunk, {client.content_chunks} with text); server: "
          f"{metrics.counters.spec_accepted_tokens:g} accepted of "
          f"{metrics.counters.spec_draft_tokens:g} drafted in {metrics.counters.spec_drafts:g} "
          f"drafts, {metrics.counters.generation_tokens:g} generated, "
          f"{metrics.counters.engine_steps:g} steps; acceptance {s and s.acceptance_rate:.3f}, "
          f"mean length {s and s.mean_acceptance_length:.2f}; client accepted "
          f"{r.accepted_client} ({r.accepted_rel_diff:.2%} off), {metrics.scrapes} scrapes")
    capture = os.environ.get("BENCHLIB_CAPTURE_METRICS")
    if capture and endpoint == "completions":
        with urllib.request.urlopen(metrics.metrics_url, timeout=10) as resp:
            Path(capture).write_bytes(resp.read())
    # the counters need the scrapes that bracket the run; how many fall inside depends on how
    # fast this machine runs it (under a second here at times), so mid-run sampling is held in
    # tests/unit/measure/test_server_metrics.py, not here
    assert metrics.failed_scrapes == 0 and metrics.scrapes >= 2, metrics.faults
    assert metrics.counters.requests_finished == N
    assert client.succeeded == N and client.output_tokens == N * OUTPUT_LEN
    assert s is not None and s.drafts and 0 < (s.acceptance_rate or 0) <= 1
    assert s.per_position_acceptance is not None and len(s.per_position_acceptance) == K
    assert (client.tokens_per_chunk or 0) > 1.5  # the drafts are accepted: fewer chunks
    assert r.reconciled is True, r
    # what is left is tokens cut off by max_tokens, or steps the API server merged into one
    # chunk when it fell behind (the engine counted more steps than the client saw chunks)
    assert r.residual_within_allowance or client.chunks < (r.steps_server or 0), r
    assert r.steps_server is not None and abs(r.steps_server - client.chunks) <= N
