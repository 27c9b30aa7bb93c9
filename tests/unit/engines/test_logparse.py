"""The engine's log facts read vLLM's lines with the memory plan's table, so they agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.engines import parse_engine_log
from benchlib.memory import ValidationCase, load_cases, parse_vllm_log

CASES = load_cases(Path(__file__).resolve().parents[2] / "data" / "vllm_logs")


def test_negative_kv_budget_of_an_oom_launch() -> None:
    facts = parse_engine_log(
        "INFO [model_runner.py:329] Model loading took 61.03 GiB and 16.146783 seconds\n"
        "INFO [gpu_worker.py:563] Available KV cache memory: -24.42 GiB\n"
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.\n")
    assert facts.kv_cache_gib == -24.42
    assert (facts.model_loading_gib, facts.model_loading_s) == (61.03, 16.146783)
    assert [f.name for f in facts.failures] == ["no-kv-room"]


def test_weights_line_without_seconds() -> None:
    facts = parse_engine_log("Model loading took: 61.03 GiB memory\n")
    assert (facts.model_loading_gib, facts.model_loading_s) == (61.03, None)


def test_sglang_lines() -> None:
    facts = parse_engine_log("sglang version: 0.5.2\nKV Cache is allocated. #tokens: 1,024\n")
    assert facts.version == "0.5.2" and facts.kv_cache_tokens == 1024


def test_a_later_line_wins_but_not_for_the_version() -> None:
    facts = parse_engine_log("vLLM API server version 0.10.1\nGPU KV cache size: 10 tokens\n"
                             "vLLM API server version 0.11.0\nGPU KV cache size: 20 tokens\n")
    assert facts.version == "0.10.1" and facts.kv_cache_tokens == 20


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_engine_facts_agree_with_the_memory_comparison(case: ValidationCase) -> None:
    """Every published startup: each number the plan's comparison reads, the engine's log
    facts read the same (the logs print each line once, or the same on every worker)."""
    facts = parse_engine_log("\n".join(case.log)).as_dict()
    plan_side = parse_vllm_log(case.log)
    assert plan_side, case.name
    names = {"vllm_version": "version", "weights_gib": "model_loading_gib",
             "kv_budget_gib": "kv_cache_gib", "kv_cache_tokens": "kv_cache_tokens",
             "max_concurrency": "max_concurrency"}
    for key, value in plan_side.items():
        assert facts[names[key]] == value, (case.name, key)
