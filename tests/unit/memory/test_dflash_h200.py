"""The plan against vLLM 0.26.0 on one H200 serving Qwen3.5-27B (multimodal, served with
--language-model-only, dummy weights) with a DFlash drafter, k = 7 (tests/data/h200_seed003,
engine.log beside it). What made the first plan 8.8 % high on weights and 3 × high on KV
tokens, term by term, each now read from vLLM's source: the vision tower (not built under
--language-model-only), the drafter's embedding and lm_head (shared with the target's), the
GDN layers' convolution state (k more positions while speculating) and their state blocks
(1 + k per request), and the drafter's non-causal layers (a KV spec of their own: "Add 4
padding layers" in the log). The activation peak of the GDN prefill is not modelled: the plan's
warnings say so and by how much, and given the engine's budget the token count is exact."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.memory import PlanConfig, plan

ROOT = Path(__file__).parents[3]
RUN = ROOT / "tests/data/h200_seed003/seed003-qwen38-27b-h200/vllm-dflash-k7"


def _facts() -> dict[str, float]:
    launch = json.loads((RUN / "02_launch.json").read_text())
    return dict(launch["results"]["log_facts"])


def _cfg(**extra: object) -> PlanConfig:
    return PlanConfig(model=ROOT / "params/models/qwen--qwen3.5-27b", gpu="H200",
                      vllm_version="0.26.0", gpu_memory_utilization=0.9, max_num_seqs=1,
                      max_model_len=4096, speculative="dflash", num_speculative_tokens=7,
                      draft_model=ROOT / "params/models/z-lab--qwen3.5-27b-dflash",
                      language_model_only=True, **extra)


def test_weights_within_one_percent() -> None:
    p = plan(_cfg())
    assert abs(p.weights.per_gpu_gib / _facts()["model_loading_gib"] - 1) < 0.01


def test_kv_tokens_exact_on_the_engines_budget() -> None:
    facts = _facts()
    p = plan(_cfg(kv_budget_gib=facts["kv_cache_gib"]))
    assert p.layout.block_size == 832  # "Setting attention block size to 832 tokens"
    assert p.capacity is not None
    assert p.capacity.num_blocks == 4363  # /metrics num_gpu_blocks
    assert p.capacity.padding_layers == 6  # "Add 2 padding layers" + "Add 4 padding layers"
    assert abs(p.capacity.max_concurrency - facts["max_concurrency"]) < 0.01
    assert p.kv_cache_tokens is not None
    assert abs(p.kv_cache_tokens / facts["kv_cache_tokens"] - 1) < 0.01


def test_predicted_budget_says_why_it_is_off() -> None:
    facts = _facts()
    p = plan(_cfg())
    assert p.kv_budget_gib is not None
    off = abs(p.kv_budget_gib / facts["kv_cache_gib"] - 1)
    assert off < 0.05
    if off > 0.01:  # the plan's own output names the term it misses
        assert any("Gated-DeltaNet" in w for w in p.warnings)
