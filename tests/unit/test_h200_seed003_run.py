"""Seed 003 moved to one H200 (tests/data/h200_seed003; the seed003 visit of docs/gpu-run.md,
2026-12-05): open-jet 0.5.1's megakernel, built here for sm_90, served on Hopper for the first
time — MTP depth 4 and off on a random-weight Q4_K_M GGUF of Qwen3.8-27B's shape — and vLLM
0.26.0 started DFlash k=7 on Qwen3.5-27B's config with its GDN prefill on Triton (no
FlashInfer), then stopped before measuring (the fairness gate: the engines' chat templates
render the same prompt one token apart, which the recipe now declares). Read without a GPU:
every open-jet request answered, what a verify step costs against a plain one, and the
break-even acceptance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchlib.pipeline.steps._spec_cost import decode_rates, spec_cost_rows
from benchlib.recipe import load_recipe
from benchlib.runs import STEP_LAUNCH, STEP_MEASURE, RunFolder

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "tests" / "data" / "h200_seed003" / "seed003-qwen38-27b-h200"
RECIPE = REPO / "params" / "seeds" / "003-qwen38-27b-h200.yaml"
OPENJET = ("openjet-mtp-d4", "openjet-mtp-off")
SCENARIOS = ("chat-3k", "greedy-5", "thinking-4")


def test_the_run_stopped_after_open_jet_and_vllms_start() -> None:
    state = json.loads((RUN / "run.json").read_text(encoding="utf-8"))
    assert state["finished"] is False
    assert state["statuses"] == {f"{v}/{s}": "ok" for v in OPENJET
                                 for s in ("00_plan", "01_download", "02_launch", "03_measure")}


@pytest.mark.parametrize("variant", OPENJET)
def test_open_jets_megakernel_served_every_request_on_hopper(variant: str) -> None:
    folder = RunFolder(path=RUN / variant)
    launch = folder.result(STEP_LAUNCH)
    assert launch is not None and launch.kind == "openjet"
    assert ("-d 4" if variant.endswith("d4") else "-d 0") in launch.command
    measured = folder.result(STEP_MEASURE)
    assert measured is not None
    for scenario in SCENARIOS:
        m = measured.measurement(scenario, 1)
        assert m is not None and m.failed == 0 and m.completed >= 3
        assert m.energy is not None and m.energy.energy_j_per_output_token  # NVML
    (engine,) = {json.loads((RUN / variant / "00_plan.json").read_text())["provenance"]
                 ["hardware"]["gpus"][0]["name"]}
    assert "H200" in engine


def test_vllm_dflash_started_on_the_hybrid_target_without_flashinfer() -> None:
    launch = RunFolder(path=RUN / "vllm-dflash-k7").result(STEP_LAUNCH)
    assert launch is not None and launch.kind == "vllm"
    assert '"method":"dflash"' in launch.command and '"num_speculative_tokens":7' in launch.command
    assert "--gdn-prefill-backend triton" in launch.command
    assert launch.log_facts["version"] == "0.26.0"
    # the target and the drafter loaded (dummy), and a KV budget was set aside
    loaded, tokens = launch.log_facts["model_loading_gib"], launch.log_facts["kv_cache_tokens"]
    assert isinstance(loaded, float) and loaded > 50
    assert isinstance(tokens, int) and tokens > 100_000
    assert RunFolder(path=RUN / "vllm-dflash-k7").result(STEP_MEASURE) is None


def test_what_mtp_costs_on_the_h200_and_where_it_would_pay() -> None:
    """Random MTP drafts are almost never accepted, so the d=4 variant's step is the verify
    step itself: dearer than a plain step, by the ratio the break-even follows from."""
    costs = {c.scenario: c for c in spec_cost_rows(load_recipe(RECIPE), RUN)}
    assert set(costs) == set(SCENARIOS)
    for c in costs.values():
        assert (c.variant, c.baseline, c.k) == ("openjet-mtp-d4", "openjet-mtp-off", 4)
        assert c.server_steps is None  # open-jet counts nothing: the wire's steps alone
        assert c.measured_tokens_per_step == pytest.approx(1.0, abs=0.05)
        assert 1.0 < c.cost_ratio < c.k + 1
        assert c.breakeven_acceptance_rate == pytest.approx((c.cost_ratio - 1) / c.k)
    # the seed publishes open-jet with MTP and without (77.20 / 48.74 tok/s on chat-3k)
    (match,) = [p for p in costs["chat-3k"].projections if p.label.startswith("to match")]
    assert match.speedup == pytest.approx(77.20 / 48.74)
    assert match.tokens_per_step == pytest.approx(match.speedup * costs["chat-3k"].cost_ratio)


def test_the_seeds_decode_rate_beside_each_variant() -> None:
    rates = decode_rates(load_recipe(RECIPE), RUN)
    for scenario in SCENARIOS:
        assert rates[("openjet-mtp-off", scenario, 1)] > rates[("openjet-mtp-d4", scenario, 1)]


def test_the_report_says_where_speculation_pays(tmp_path: Path) -> None:
    """04_compare again on a copy of the kept run (the visit ended before it), then the
    report: the cost table, its figure, and the first screen's sentence with the
    break-even."""
    from benchlib.pipeline.steps.compare import compare
    from benchlib.report import render_report
    from benchlib.runs import STEP_COMPARE

    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    compare(load_recipe(RECIPE), run_dir=run,
            results_path=RunFolder(path=run).results(STEP_COMPARE))
    assert (run / "spec_cost.png").is_file()
    page = render_report(run).html.read_text(encoding="utf-8")
    assert "id='spec-cost'" in page and "id='spec-cost-table'" in page
    assert "break-even" in page and "needs τ" in page
    first = page[:page.index("id='contents'")]
    assert "a verify step costs" in first and "tokens per step" in first


def test_the_h200_references_are_the_seeds_own_figures() -> None:
    """params/seeds/references/003-h200.yaml is 003.yaml beside the H200 recipe: the same
    figures under the same names (the ramp left out), each with one caveat more."""
    import yaml

    refs = REPO / "params" / "seeds" / "references"
    seed = {r["name"]: r for r in yaml.safe_load((refs / "003.yaml").read_text())["references"]}
    moved = yaml.safe_load((refs / "003-h200.yaml").read_text())["references"]
    assert {r["name"] for r in moved} == {n for n, r in seed.items()
                                          if r["scenario"] != "long-context"}
    for r in moved:
        assert r["results"] == seed[r["name"]]["results"]
        assert r["caveats"][:-1] == seed[r["name"]]["caveats"]
        assert "moved to one H200" in r["caveats"][-1]
