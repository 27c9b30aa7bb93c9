"""Every key shared with ``vllm bench serve``'s ``--save-result`` JSON means what vLLM means.

Both tools run on the same scripted server with the same prompts (one JSONL file). The server
is set up so that definitions that differ would show: a chat stream whose role-only chunk is
sent at once (vLLM's TTFT ends there, ours at the first text), three tokens per chunk (vLLM's
peak counts chunks), a usage block whose prompt count is not the dataset's (vLLM 0.32 takes
usage). Token counts must be equal; each timing key must sit on the wire truth computed with
vLLM's definition, vLLM's within its known lateness, and the two within a fixed tolerance
(tests/integration/_vllm_compare.py); a wrong value fails that comparison (shown on mutated
copies of our result).
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
from ._vllm_compare import disagreements

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


def _wire_keys(truth: Path) -> dict[str, float]:
    """The twelve timing keys (mean, median, p90 of TTFT, TPOT, ITL, E2EL) computed from one
    server's own truth with vLLM's definitions."""
    stats = _truth_stats(truth)
    out: dict[str, float] = {}
    for metric, xs in stats.items():
        out[f"mean_{metric}_ms"] = float(np.mean(xs))
        out[f"median_{metric}_ms"] = float(np.median(xs))
        out[f"p90_{metric}_ms"] = float(np.percentile(xs, 90))
    return out


def _mutations(ours: dict[str, Any]) -> list[tuple[str, float]]:
    """Wrong values a shared key could carry: another definition (TTFT to the first text, not
    the role chunk; TPOT per chunk, not per token; E2EL without the TTFT), a unit slip, a
    20 ms shift, a 50 % scale."""
    return [("median_ttft_ms", ours["median_ttft_text_ms"]),
            ("mean_ttft_ms", ours["mean_ttft_text_ms"]),
            ("median_tpot_ms", ours["median_tpot_ms"] * TOKENS_PER_CHUNK),
            ("median_e2el_ms", ours["median_e2el_ms"] - ours["median_ttft_text_ms"]),
            ("p90_itl_ms", ours["p90_itl_ms"] / 1e3),
            ("mean_itl_ms", ours["mean_itl_ms"] + 20.0),
            ("median_e2el_ms", ours["median_e2el_ms"] * 1.5)]


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

    # timing: each tool on its own server's wire (vLLM's definitions), and the two together,
    # within tolerances fixed in _vllm_compare (a wrong key fails: test_a_wrong_value_fails)
    wire, ref_wire = _wire_keys(ours_server.truth), _wire_keys(ref_server.truth)
    assert len(wire) == 12
    for key in wire:
        print(f"{key}: ours {ours[key]:.3f} (wire {wire[key]:.3f}) vLLM {ref[key]:.3f} "
              f"(wire {ref_wire[key]:.3f})")
    assert not disagreements(ours, ref, wire, ref_wire)
    # the same comparison fails when one shared key's value is wrong: each mutation alone
    for key, wrong in _mutations(ours):
        mutated = {**ours, key: wrong}
        found = disagreements(mutated, ref, wire, ref_wire)
        assert any("against vLLM's" in f for f in found), (key, wrong, found)
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


def _median_sent_ttft(truth: Path) -> float:
    """Median of request arrival → the first chunk's send, from the server's own stamps."""
    return float(np.median([(row["content_writes_ns"][0] - row["arrival_ns"]) / 1e6
                            for row in load_jsonl(truth)]))


#: how much closer to the wire benchlib's median TTFT must be than vllm bench serve's (ms)
CLOSER_MARGIN_MS = 1.0


def test_benchlib_is_closer_to_the_wire_than_vllm_bench_serve(
        vllm_bench: None, scripted: Callable[..., Any], tmp_path: Path,
        tiny_model: Path) -> None:
    """The headline claim, in CI: the same workload (completions, concurrency 32, 96 requests
    of 16 one-token chunks 8 ms apart, 25 ms to the first) on one scripted server each; each
    tool's median TTFT minus the median of its server's own send stamps. benchlib's error must
    be smaller than vLLM's by ``CLOSER_MARGIN_MS`` (benchmarks/RESULTS.md measured +0.00 ms
    against +2.2 ms at concurrency 8 and +12.8 ms at 64; here, at 32 on two cores shared with
    three other suites, benchlib −0.04 to +0.00 ms, once +4.7 ms with its reads late and its
    bounds saying so, and vLLM +4.5 to +12.1 ms)."""
    args = ("--ttft-ms", "25", "--itl-ms", "8", "--output-tokens", "16")
    n, conc = 96, 32
    ours_server = scripted(*args)
    ours = measure(MeasureConfig(base_url=ours_server.url, model="scripted", endpoint="completions",
                                 tokenizer=tiny_model, input_len=64, output_len=16,
                                 num_prompts=n, max_concurrency=conc, seed=0,
                                 disable_tqdm=True)).to_json()
    ref_server = scripted(*args)
    peer = run_vllm_bench(ref_server.url, "scripted", tiny_model, endpoint="completions",
                          input_len=64, output_len=16, num_prompts=n, max_concurrency=conc,
                          seed=0, workdir=tmp_path / "vllm")
    ref = json.loads(peer.raw_path.read_text())
    ours_error = ours["median_ttft_ms"] - _median_sent_ttft(ours_server.truth)
    ref_error = ref["median_ttft_ms"] - _median_sent_ttft(ref_server.truth)
    print(f"\nmedian TTFT error: benchlib {ours_error:+.3f} ms, vllm bench serve "
          f"{ref_error:+.3f} ms (margin {CLOSER_MARGIN_MS} ms)")
    assert (ours["completed"], ref["completed"]) == (n, n)
    assert abs(ours_error) + CLOSER_MARGIN_MS < abs(ref_error), (ours_error, ref_error)
