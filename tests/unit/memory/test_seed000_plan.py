"""Seed 000's arithmetic, done by the plan: GLM-5.2 (744B) on one node of 8×B200 — BF16
weights alone are ~1.48 TB and leave no KV cache (the post: "OOM"), FP8 halves them and
leaves most of the memory to the KV cache; BF16 needs a second node.

The config is GLM-5.2's shape as a public ``glm_moe_dsa`` test fixture writes it (78 layers,
hidden 6144, 256 routed experts of 2048, MLA with kv_lora_rank 512), not the hub's file: the
hub is out of reach here, and 00_plan reads the real one on the machine that runs the
recipe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchlib.memory import PlanConfig, plan, plan_nodes

CONFIG = Path(__file__).resolve().parents[2] / "data" / "configs" / \
    "glm_moe_dsa-glm52-shape.json"


def _plan(weight_dtype: str, gpus: int) -> dict[str, Any]:
    return plan(PlanConfig(model=CONFIG, gpu="B200", num_gpus=gpus, tp=gpus,
                           weight_dtype=weight_dtype, kv_cache_dtype="fp8",
                           max_model_len=32768)).summary()


def test_the_posts_744b_and_its_bf16_out_of_memory() -> None:
    bf16 = _plan("bf16", 8)
    assert bf16["total_params"] == pytest.approx(744e9, rel=0.01)
    # 744B × 2 bytes ≈ 1.48 TB: the post's figure
    assert bf16["weights_gib_total"] * 2**30 == pytest.approx(1.48e12, rel=0.02)
    assert bf16["fits"] is False and bf16["kv_cache_tokens"] in (0, None)


def test_fp8_fits_one_node_with_room_for_the_kv_cache() -> None:
    fp8 = _plan("fp8", 8)
    assert fp8["weights_gib_total"] * 2**30 == pytest.approx(744e9, rel=0.02)
    assert fp8["fits"] is True and fp8["kv_cache_tokens"] > 1_000_000
    assert fp8["kv_budget_gib_per_gpu"] > 60  # "more than half the VRAM left to the KV cache"


def test_bf16_needs_a_second_node() -> None:
    assert _plan("bf16", 16)["fits"] is True
    # and the node search says so, with the layout vLLM advises (test_nodes.py: more)
    found = plan_nodes(PlanConfig(model=CONFIG, gpu="B200", weight_dtype="bf16",
                                  kv_cache_dtype="fp8", max_model_len=32768), gpus_per_node=8)
    assert found.line.startswith("needs 2 nodes of 8 × B200 (tp 8 × pp 2)")
