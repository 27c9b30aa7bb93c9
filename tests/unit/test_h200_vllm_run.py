"""The H200 run of ``params/h200-vllm-short.yaml`` (tests/data/h200_vllm_run; visit 4 of
docs/gpu-run.md, made with the engine adapters and typed results of issue 26): vLLM 0.26.0
CUDA through every step on one H200, read without a GPU through the typed step results
(``RunFolder.result(STEP)``) — the plan against the live engine's memory for both variants,
every request answered, n-gram speculation beside none, and the report rendered again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchlib.recipe import load_recipe
from benchlib.report import render_report
from benchlib.runs import STEP_COMPARE, STEP_LAUNCH, STEP_MEASURE, RunFolder

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "tests" / "data" / "h200_vllm_run" / "h200-vllm-short"
VARIANTS = ("vllm-nospec", "vllm-ngram")
CONCURRENCIES = (1, 16, 64)


def test_every_step_ran_on_the_recipe_kept_in_params() -> None:
    state = json.loads((RUN / "run.json").read_text(encoding="utf-8"))
    assert state["finished"] is True and state["recipe"] == "params/h200-vllm-short.yaml"
    assert set(state["statuses"].values()) == {"ok"} and len(state["statuses"]) == 9
    recipe = load_recipe(REPO / "params" / "h200-vllm-short.yaml")
    assert [v.name for v in recipe.variants] == list(VARIANTS)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_plan_is_within_one_percent_of_the_live_engine(variant: str) -> None:
    """Qwen3-8B is held apart from the overhead model's fit (tests/data/h200_memory/
    shapes.json): weights +0.09 %, KV budget −0.16 % without speculation, 0.00 % with n-gram
    (the rejection sampler's term); the same figures as visit 3's run."""
    launch = RunFolder(path=RUN / variant).result(STEP_LAUNCH)
    assert launch is not None and launch.kind == "vllm" and "--enforce-eager" in launch.command
    assert launch.log_facts["version"] == "0.26.0"
    rows = {r.figure: r for r in launch.plan_vs_engine.rows}
    for figure in ("weights_gib", "kv_budget_gib", "kv_cache_tokens", "kv_blocks"):
        diff = rows[figure].diff_pct
        assert diff is not None and abs(diff) < 1.0, rows[figure]
    assert not any(r.flagged for r in launch.plan_vs_engine.rows)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_request_was_answered_and_counted_by_the_server(variant: str) -> None:
    measured = RunFolder(path=RUN / variant).result(STEP_MEASURE)
    assert measured is not None
    for c in CONCURRENCIES:
        m = measured.measurements[f"random/c{c}"]
        assert m.failed == 0 and m.completed == {1: 8, 16: 32, 64: 128}[c]
        assert m.median_tpot_ms is not None and 3.0 < m.median_tpot_ms < 30.0
        # dummy weights with a smaller tokenizer: tokens without text, timed by events
        assert m.text_free_requests


def test_ngram_speculation_beside_none_says_what_it_rests_on() -> None:
    """With dummy weights the model repeats itself, so n-gram drafts are nearly all accepted
    (4.85 tokens per step of 5 at c1): a 4× per-user speedup that is a property of the
    weights, which every row's caveat says."""
    ngram = RunFolder(path=RUN / "vllm-ngram").result(STEP_MEASURE)
    assert ngram is not None
    spec = ngram.measurements["random/c1"].speculative
    assert spec is not None and spec.mean_acceptance_length is not None
    assert spec.mean_acceptance_length > 4.0
    compare = RunFolder(path=RUN).result(STEP_COMPARE)
    assert compare is not None
    rows = {(r.variant, r.concurrency): r for r in compare.variants}
    c1 = rows[("vllm-ngram", 1)]
    assert c1.speedup is not None and c1.speedup > 3.0 and c1.speedup_over == "vllm-nospec"
    assert all("dummy weights" in (r.caveats or "") for r in compare.variants)


def test_the_report_renders_from_the_committed_folder(tmp_path: Path) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)  # its report.html is kept once: docs/examples/h200-vllm-short
    page = render_report(run).html.read_text(encoding="utf-8")
    assert "NVIDIA H200" in page and "vllm-ngram" in page and "dummy weights" in page
