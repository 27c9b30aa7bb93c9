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
