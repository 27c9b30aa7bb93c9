"""What speculation costs, read from the kept H200 run (tests/data/h200_vllm_run: vLLM 0.26.0
eager, n-gram k=4 against none, dummy weights): the wire's steps are vLLM's one event per
step, the server's count stands beside and falls short only by the drafts accepted past
max_tokens, and the break-even follows from the two step times."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.measure import read_requests, requests_path
from benchlib.pipeline.steps._spec_cost import decode_rates, spec_cost_rows, spec_cost_table
from benchlib.recipe import load_recipe
from benchlib.runs import STEP_MEASURE, RunFolder

REPO = Path(__file__).resolve().parents[3]
RUN = REPO / "tests" / "data" / "h200_vllm_run" / "h200-vllm-short"
RECIPE = REPO / "params" / "h200-vllm-short.yaml"


def test_the_kept_runs_ngram_step_is_set_against_its_own_plain_step() -> None:
    (cost,) = spec_cost_rows(load_recipe(RECIPE), RUN)
    assert (cost.variant, cost.baseline, cost.scenario, cost.k) == (
        "vllm-ngram", "vllm-nospec", "random", 4)
    measured = RunFolder(path=RUN / "vllm-ngram").result(STEP_MEASURE)
    assert measured is not None
    m = measured.measurement("random", 1)
    assert m is not None and m.speculative is not None
    records = [r for r in read_requests(requests_path(RUN / "vllm-ngram" / m.result_json))
               if r.success]
    # vLLM at concurrency 1 sends one event per engine step: every gap is a step
    assert cost.steps == sum(len(r.itl_ms) for r in records)
    by_length = sum(r.finish_reason == "length" for r in records)
    assert cost.server_steps is not None
    assert cost.server_steps <= cost.steps <= cost.server_steps + cost.k * by_length
    # the ratio is the two step times; the break-even is where τ / r reaches 1
    assert cost.cost_ratio == pytest.approx(cost.step_ms / cost.plain_step_ms)
    assert cost.breakeven_tokens_per_step == pytest.approx(cost.cost_ratio)
    assert 1 < cost.cost_ratio < cost.k + 1
    # dummy weights repeat one token: n-gram accepts nearly every draft
    assert cost.measured_tokens_per_step > 4


def test_the_table_and_the_seeds_decode_rate() -> None:
    recipe = load_recipe(RECIPE)
    table = spec_cost_table(recipe, RUN)
    assert list(table["variant"]) == ["vllm-ngram"]
    rates = decode_rates(recipe, RUN)
    # the mean of each request's rate, against 1000 / median TPOT: close, not equal
    measured = RunFolder(path=RUN / "vllm-nospec").result(STEP_MEASURE)
    assert measured is not None
    m = measured.measurement("random", 1)
    assert m is not None and m.median_tpot_ms
    assert rates[("vllm-nospec", "random", 1)] == pytest.approx(1000 / m.median_tpot_ms,
                                                                rel=0.25)


def test_the_seeds_decode_rate_stands_beside_references() -> None:
    # 04_compare's figures carry each request's own rate, then the mean, under its own name
    from benchlib.pipeline.steps._references import measured_figures

    recipe = load_recipe(RECIPE)
    figures = measured_figures(recipe, RUN)
    rates = decode_rates(recipe, RUN)
    assert rates
    for key, rate in rates.items():
        assert figures[key]["mean_request_decode_rate"] == rate
        assert figures[key]["per_user_tok_s"] != rate


def test_seed003s_mean_speeds_are_set_beside_the_mean_of_rates() -> None:
    from benchlib.references import load_references

    refs = load_references(REPO / "params/seeds/references/003.yaml")
    for ref, figures in refs:
        if ref.scenario in ("greedy-5", "thinking-4"):
            assert "mean_request_decode_rate" in figures, ref.name
            assert "per_user_tok_s" not in figures, ref.name
