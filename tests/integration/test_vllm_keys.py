"""Every key shared with ``vllm bench serve``'s ``--save-result`` JSON means what vLLM means.

Both tools run on the same scripted server with the same prompts (one JSONL file). The server
is set up so that definitions that differ would show: a chat stream whose role-only chunk is
sent at once (vLLM's TTFT ends there, ours at the first text), three tokens per chunk (vLLM's
peak counts chunks), a usage block whose prompt count is not the dataset's (vLLM 0.32 takes
usage). Token counts must be equal; each timing key must sit on the wire truth computed with
vLLM's definition (ours within a tight bound), and differ from vLLM's own value by no more
than vLLM's own distance from that truth explains.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchlib.measure import MeasureConfig, measure
from benchmarks._peers import run_vllm_bench, vllm_python

from ._truth import load_jsonl

N, CONCURRENCY, OUTPUT_LEN, TOKENS_PER_CHUNK = 24, 4, 12, 3
#: what vLLM 0.32's serve.py writes for a generation run with --save-detailed (plus the
#: client queue statistics it adds with --max-concurrency)
VLLM_032_KEYS = {
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
    "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed",
    "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
    "output_throughput", "total_token_throughput", "input_lens", "output_lens", "ttfts",
    "itls", "latencies", "start_times", "queue_times", "generated_texts", "errors",
    "max_output_tokens_per_s", "max_concurrent_requests", "rtfx",
}


def _truth_stats(truth: Path) -> dict[str, list[float]]:
    """Per-request values with vLLM's definitions, from what the server put on the wire:
    TTFT at the role chunk, ITL between every choices event, E2EL at the last content."""
    out: dict[str, list[float]] = {"ttft": [], "itl": [], "e2el": [], "tpot": []}
    for row in load_jsonl(truth):
        events = [row["role_write_ns"], *row["content_writes_ns"]]
        t0 = row["arrival_ns"]
        ttft, e2el = (events[0] - t0) / 1e6, (events[-1] - t0) / 1e6
        out["ttft"].append(ttft)
        out["e2el"].append(e2el)
        out["itl"].extend((b - a) / 1e6 for a, b in itertools.pairwise(events))
        out["tpot"].append((e2el - ttft) / (row["completion_tokens"] - 1))
    return out


@pytest.fixture
def vllm_bench() -> None:
    if not vllm_python().exists():
        if os.environ.get("BENCHLIB_ENGINE_PYTHON"):
            pytest.fail(f"{vllm_python()} is missing (make engine)")
        pytest.skip("no vLLM environment; run `make engine`")


def test_every_shared_key_means_what_vllm_means(vllm_bench: None,
                                                 scripted: Callable[..., Any], tmp_path: Path,
                                                 tiny_model: Path) -> None:
    server_args = ("--ttft-ms", "30", "--itl-ms", "8", "--tokens-per-chunk",
                   str(TOKENS_PER_CHUNK), "--output-tokens", str(OUTPUT_LEN))
    words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": " ".join(words[: 2 + i % 6]) * (1 + i % 4)})
                               + "\n" for i in range(N)))
    ours_server = scripted(*server_args)
    ours = measure(MeasureConfig(base_url=ours_server.url, model="scripted", endpoint="chat",
                                 tokenizer=tiny_model, dataset="file", dataset_path=prompts,
                                 output_len=OUTPUT_LEN, num_prompts=N,
                                 max_concurrency=CONCURRENCY, seed=0, disable_tqdm=True,
                                 percentiles=(50.0, 90.0, 99.0),
                                 result_json=tmp_path / "benchlib.json")).to_json()
    ref_server = scripted(*server_args)
    peer = run_vllm_bench(ref_server.url, "scripted", tiny_model, endpoint="chat",
                          input_len=1, output_len=OUTPUT_LEN, num_prompts=N,
                          max_concurrency=CONCURRENCY, seed=0, workdir=tmp_path / "vllm",
                          dataset_path=prompts)
    ref = json.loads(peer.raw_path.read_text())

    # every key vLLM writes is present in ours
    assert ref.keys() | {"request_goodput"} >= VLLM_032_KEYS
    missing = (VLLM_032_KEYS | {k for k in ref if k.endswith("_ms")}) - ours.keys()
    assert not missing, missing

    # counts: equal, element by element (the server's prompt count, not the dataset's)
    for key in ("completed", "failed", "num_prompts", "total_input_tokens",
                "total_output_tokens", "input_lens", "output_lens", "max_concurrency"):
        assert ours[key] == ref[key], key
    assert ours["total_input_tokens"] != ours["total_input_tokens_dataset"]
    assert [len(x) for x in ours["itls"]] == [len(x) for x in ref["itls"]]
    assert ours["generated_texts"] == ref["generated_texts"]

    # timing: ours on the wire truth (vLLM's definitions), vLLM's off by what it mis-times
    truth = {k: v for k, v in _truth_stats(ours_server.truth).items()}
    ref_truth = _truth_stats(ref_server.truth)
    checked = 0
    for metric in ("ttft", "tpot", "itl", "e2el"):
        for stat, fn in (("mean", np.mean), ("median", np.median), ("p90", None)):
            key = f"{stat}_{metric}_ms"

            def value(xs: list[float], fn: Any = fn) -> float:
                return float(fn(xs)) if fn is not None else float(np.percentile(xs, 90))

            mine, wire = ours[key], value(truth[metric])
            assert abs(mine - wire) <= 0.5 + 0.03 * wire, (key, mine, wire)
            # the two runs' wires differ a little too: what separates the tools' numbers is
            # each one's distance from its own wire plus that
            ref_wire = value(ref_truth[metric])
            explained = abs(ref[key] - ref_wire) + abs(mine - wire) + abs(wire - ref_wire)
            assert abs(mine - ref[key]) <= max(0.1 * abs(ref[key]), explained + 1.0), key
            checked += 1
    assert checked == 12
    # vLLM's TTFT here is the role chunk (sent at once); ours to the first text is apart
    assert ours["median_ttft_ms"] < 5 < 25 < ours["median_ttft_text_ms"]
    # peaks and rates on the same definitions: chunk events per second, not tokens
    assert ours["max_output_tokens_per_s"] == pytest.approx(ref["max_output_tokens_per_s"],
                                                            rel=0.25)
    assert ours["peak_output_tokens_per_s"] > 2 * ours["max_output_tokens_per_s"]
    assert abs(ours["max_concurrent_requests"] - ref["max_concurrent_requests"]) <= 1
    for key in ("duration", "request_throughput", "output_throughput",
                "total_token_throughput"):
        assert ours[key] == pytest.approx(ref[key], rel=0.15), key
    assert len(ours["queue_times"]) == len(ref["queue_times"]) == N
    assert all(q >= 0 for q in ours["queue_times"])
    assert math.isclose(sum(ours["latencies"]) / N * 1e3, ours["mean_e2el_ms"], rel_tol=1e-9)
