"""Against published vLLM startups: KV tokens from the reported budget within 1%, weights
within 3%, the verdict right on the OOM launches; the cases cover what the issue asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.memory import ValidationCase, check_case, load_cases

CASES_DIR = Path(__file__).resolve().parents[2] / "data" / "vllm_logs"
CASES = load_cases(CASES_DIR)


def test_enough_cases_covering_every_kind() -> None:
    assert len(CASES) >= 10
    covered = {c for case in CASES for c in case.covers}
    for kind in ("dense", "gqa", "moe", "mla", "sliding-window", "hybrid-linear-attention",
                 "tensor-parallel", "oom", "fp8-kv"):
        assert kind in covered, kind
    assert any(c.startswith("quantized") for c in covered)
    with_tokens = [c for c in CASES if "kv_cache_tokens" in c.reported]
    assert len(with_tokens) >= 7
    assert len([c for c in CASES if "weights_gib" in c.reported]) >= 10


def test_every_case_names_its_source() -> None:
    for case in CASES:
        assert case.source and case.config_source
        assert (case.folder / "config.json").is_file()
        assert case.reported, f"{case.name}: no vLLM memory line parsed from its log"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_matches_vllm(case: ValidationCase) -> None:
    r = check_case(case)
    if r.kv_tokens_reported is not None:
        assert r.kv_tokens_err_pct is not None and abs(r.kv_tokens_err_pct) < 1.0, r
        assert r.concurrency is not None and r.concurrency_reported is not None
        assert abs(r.concurrency - r.concurrency_reported) / r.concurrency_reported < 0.01, r
    if r.weights_reported is not None:
        assert r.weights_err_pct is not None and abs(r.weights_err_pct) < 3.0, r


@pytest.mark.parametrize("case", [c for c in CASES if "oom" in c.covers],
                         ids=[c.name for c in CASES if "oom" in c.covers])
def test_oom_launches_are_called_oom(case: ValidationCase) -> None:
    from benchlib.memory import PlanConfig, plan

    p = plan(PlanConfig(model=case.folder / "config.json", **case.settings))
    assert not p.fits
    assert "OOM" in p.verdict


#: cases whose budget the plan does not predict within the bound below, and why (each is
#: outside what the plan's overhead was derived from or measured on)
BUDGET_OUTSIDE = {
    "kimi-linear-48b-awq-3090-tp2": "vLLM 0.11 (before 0.21: the overhead fitted to the "
                                    "other published logs) on an AWQ hybrid whose linear "
                                    "layers' profile the fitted model does not know",
    "qwen3-32b-rtxpro6000-tp2": "vLLM 0.27.1 on Blackwell (sm_120): the overhead is derived "
                                "from 0.26.0's source and measured on Hopper; this launch "
                                "reserved 0.81 GiB more than that (its log prints no "
                                "breakdown to say where)",
    "qwen3-32b-rtxpro6000-tp1-oom": "the same 0.27.1 on Blackwell: 2.35 GiB more",
}
#: the predicted budget's bound: this share of the memory vLLM requests
BUDGET_SHARE = 0.01


#: the cases whose log gives a budget and whose settings let the plan predict one
BUDGET_CASES = [c for c in CASES if check_case(c).budget_err_gib is not None]


def test_most_cases_predict_their_budget() -> None:
    assert len(BUDGET_CASES) >= 11 and set(BUDGET_OUTSIDE) <= {c.name for c in BUDGET_CASES}


@pytest.mark.parametrize("case", BUDGET_CASES, ids=[c.name for c in BUDGET_CASES])
def test_predicted_budget_within_a_share_of_the_requested_memory(case: ValidationCase) -> None:
    """The KV budget the plan predicts from the GPU's total (weights and overhead taken off)
    against "Available KV cache memory", within 1 % of the memory vLLM requests; the cases
    outside what the overhead model covers are named with their reasons, and checked to be
    outside still (a fix that brings one in must move it out of the list)."""
    from benchlib.memory import PlanConfig, plan

    r = check_case(case)
    assert r.budget_err_gib is not None
    p = plan(PlanConfig(model=case.folder / "config.json", **case.settings))
    assert p.usable_gib is not None
    inside = abs(r.budget_err_gib) <= BUDGET_SHARE * p.usable_gib
    assert inside == (case.name not in BUDGET_OUTSIDE), (case.name, r.budget_err_gib,
                                                         p.usable_gib)
