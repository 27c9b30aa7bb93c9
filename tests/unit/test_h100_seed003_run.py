"""Seed 003's whole comparison on one Hopper GPU (tests/data/h100_seed003; the seed003 visit of
docs/gpu-run.md, 2026-12-06): the device tool lent an H100 80GB, so the H200 recipe ran with its
hardware and plan relabelled for it (three lines, recorded in the run's recipe.json). Every
variant measured, 04_compare included: vLLM 0.26.0 DFlash k=7 and off on Qwen3.5-27B's config
(dummy weights, GDN prefill on Triton), open-jet 0.5.1's megakernel (built here for sm_90) MTP
d=4 and off, and llama.cpp CUDA on the very GGUF open-jet served. Read without a GPU: every
request answered, the server's counters reconciled with the wire, what a verify step costs on
each engine and where speculation would pay, the seed's figures beside ours, the plan beside
vLLM's split."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchlib.memory import PlanConfig, plan
from benchlib.pipeline.steps._spec_cost import decode_rates, spec_cost_rows
from benchlib.recipe import Recipe
from benchlib.runs import STEP_LAUNCH, STEP_MEASURE, RunFolder

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "tests" / "data" / "h100_seed003" / "seed003-qwen38-27b-h200"
VARIANTS = ("vllm-dflash-k7", "vllm-off", "openjet-mtp-d4", "openjet-mtp-off", "llamacpp")
SCENARIOS = ("chat-3k", "greedy-5", "thinking-4")
#: the speculative variant of each engine and its own baseline, with its depth
PAIRS = {"vllm-dflash-k7": ("vllm-off", 7), "openjet-mtp-d4": ("openjet-mtp-off", 4)}


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _recipe_as_run() -> Recipe:
    """The recipe the run recorded (recipe.json: the H200 recipe relabelled for the H100),
    validated as the report reads it."""
    return Recipe.model_validate(_json(RUN / "recipe.json"))


def test_every_variant_and_the_comparison_finished_on_an_h100() -> None:
    state = _json(RUN / "run.json")
    assert state["finished"] is True
    assert state["statuses"] == {
        **{f"{v}/{s}": "ok" for v in VARIANTS
           for s in ("00_plan", "01_download", "02_launch", "03_measure")},
        "04_compare": "ok"}
    recorded = _json(RUN / "recipe.json")
    assert recorded["hardware"]["gpu_name_pattern"] == "H100"
    assert recorded["plan"]["gpu"] == "H100"
    for variant in VARIANTS:
        (gpu,) = _json(RUN / variant / "00_plan.json")["provenance"]["hardware"]["gpus"]
        assert gpu["name"] == "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_request_answered_with_energy_per_token(variant: str) -> None:
    measured = RunFolder(path=RUN / variant).result(STEP_MEASURE)
    raw = _json(RUN / variant / "03_measure.json")["results"]
    assert measured is not None
    for scenario in SCENARIOS:
        m = measured.measurement(scenario, 1)
        assert m is not None and m.failed == 0 and m.completed >= 3
        # output tokens from the server's usage, never the tokenizer
        assert raw[f"{scenario}/c1"]["output_tokens_source"] == {"usage": m.completed,
                                                                 "tokenizer": 0}
        assert m.energy is not None and m.energy.source == "nvml"
        assert m.energy.energy_j_per_output_token is not None
        assert 1 < m.energy.energy_j_per_output_token < 100


def test_vllm_dflash_measured_on_the_hybrid_target_without_flashinfer() -> None:
    """DFlash drafted 7 tokens a step and the dummy drafter had none accepted: the server's
    counters (drafted, accepted, steps) agree with the wire's count of tokens."""
    launch = RunFolder(path=RUN / "vllm-dflash-k7").result(STEP_LAUNCH)
    assert launch is not None and launch.kind == "vllm"
    assert '"method":"dflash"' in launch.command and '"num_speculative_tokens":7' in launch.command
    assert "--gdn-prefill-backend triton" in launch.command
    assert launch.log_facts["version"] == "0.26.0"
    measured = RunFolder(path=RUN / "vllm-dflash-k7").result(STEP_MEASURE)
    assert measured is not None
    for scenario in SCENARIOS:
        raw = _json(RUN / "vllm-dflash-k7" / "03_measure.json")["results"][f"{scenario}/c1"]
        spec, server = raw["speculative"], raw["server_metrics"]
        assert spec["source"] == "metrics" and spec["reconciled"] is True
        assert spec["accepted_tokens"] == 0 and spec["mean_acceptance_length"] == 1.0
        steps = server["engine_steps"] - raw["completed"]  # each request's prefill step
        assert spec["draft_tokens"] == 7 * steps
        assert server["generation_tokens"] == raw["total_output_tokens"]


def test_llamacpp_served_the_gguf_open_jet_served() -> None:
    commands = {v: RunFolder(path=RUN / v).result(STEP_LAUNCH) for v in
                ("openjet-mtp-off", "llamacpp")}
    gguf = "qwen38-27b-random-Q4_K_M.gguf"
    for launch in commands.values():
        assert launch is not None and gguf in launch.command
    assert commands["llamacpp"] is not None and "-ngl 99" in commands["llamacpp"].command


def test_what_a_verify_step_costs_on_each_engine() -> None:
    """Neither drafter is trained, so each speculative step is the verify step itself:
    dearer than its engine's plain step by r, and speculation pays above r tokens a step."""
    rows = spec_cost_rows(_recipe_as_run(), RUN)
    assert {(c.variant, c.scenario) for c in rows} == {(v, s) for v in PAIRS for s in SCENARIOS}
    for c in rows:
        baseline, k = PAIRS[c.variant]
        assert (c.baseline, c.k) == (baseline, k)
        assert c.measured_tokens_per_step == pytest.approx(1.0, abs=0.05)
        assert 1.0 < c.cost_ratio < k + 1
        assert c.breakeven_tokens_per_step == pytest.approx(c.cost_ratio)
        assert c.breakeven_acceptance_rate == pytest.approx((c.cost_ratio - 1) / k)
        if c.variant.startswith("vllm"):
            assert c.server_steps == c.steps  # vLLM's counters and the wire agree
        else:
            assert c.server_steps is None  # open-jet counts nothing: the wire's steps alone
    # the recorded 04_compare holds the same rows
    kept = _json(RUN / "04_compare.json")["results"]["spec_cost"]
    assert {(r["variant"], r["scenario"]): round(r["cost_ratio"], 6) for r in kept} == {
        (c.variant, c.scenario): round(c.cost_ratio, 6) for c in rows}


def test_the_seeds_decode_rate_and_its_figures_beside_ours() -> None:
    rates = decode_rates(_recipe_as_run(), RUN)
    for scenario in SCENARIOS:
        for variant, (baseline, _) in PAIRS.items():
            assert rates[(baseline, scenario, 1)] > rates[(variant, scenario, 1)]
    refs = _json(RUN / "04_compare.json")["results"]["references"]
    published = {(r["reference"], r["metric"]): r for r in refs}
    dflash = published[("vllm-dflash2-chat-3k", "per_user_tok_s")]
    assert dflash["published"] == pytest.approx(109.42) and dflash["measured"] > 0
    assert published[("openjet-mtp-d4-greedy-5", "mean_request_decode_rate")]["measured"] > 0


def test_the_plan_beside_vllms_split_on_the_h100() -> None:
    """Weights within 1 % on both vLLM variants; the KV budget is not (vLLM logged about 2 GiB
    more activation than its source accounts for on this family's cold starts: 2.50 GiB off
    and 2.73 with DFlash here, 2.73 with DFlash on the H200 too), and the plan's own output
    says so; given the engine's budget the token count is exact; what DFlash adds to the peak
    is the source's."""
    activation: dict[str, tuple[float, float]] = {}
    for variant, dflash in (("vllm-dflash-k7", True), ("vllm-off", False)):
        facts = _json(RUN / variant / "02_launch.json")["results"]["log_facts"]
        cfg: dict[str, Any] = dict(
            model=REPO / "params/models/qwen--qwen3.5-27b", gpu="H100", vllm_version="0.26.0",
            gpu_memory_utilization=0.9, max_num_seqs=1, max_model_len=4096,
            language_model_only=True)
        if dflash:
            cfg.update(speculative="dflash", num_speculative_tokens=7,
                       draft_model=REPO / "params/models/z-lab--qwen3.5-27b-dflash")
        p = plan(PlanConfig(**cfg))
        assert abs(p.weights.per_gpu_gib / facts["model_loading_gib"] - 1) < 0.01
        assert p.kv_budget_gib is not None and p.kv_budget_gib > facts["kv_cache_gib"]
        assert any("Gated-DeltaNet" in w for w in p.warnings)
        activation[variant] = (p.overhead.activation_gib, facts["activation_peak_gib"])
        given = plan(PlanConfig(**cfg, kv_budget_gib=facts["kv_cache_gib"]))
        assert given.kv_cache_tokens is not None
        assert abs(given.kv_cache_tokens / facts["kv_cache_tokens"] - 1) < 0.01
    # what DFlash adds to the peak, from the source (its five hidden states of the target,
    # 0.195 GiB), against what the engine logged: 2.73 - 2.50 GiB
    (plan_on, engine_on), (plan_off, engine_off) = (activation["vllm-dflash-k7"],
                                                    activation["vllm-off"])
    assert abs((plan_on - plan_off) - (engine_on - engine_off)) < 0.05


def test_the_report_names_each_engines_break_even(tmp_path: Path) -> None:
    from benchlib.report import render_report

    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    page = render_report(run).html.read_text(encoding="utf-8")
    assert "id='spec-cost'" in page and "id='spec-cost-table'" in page
    first = page[:page.index("id='contents'")]
    for variant in PAIRS:
        assert f"Speculation on {variant}" in first
    assert first.count("a verify step costs") == 2
    assert "NVIDIA H100 80GB HBM3" in page
