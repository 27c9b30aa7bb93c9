"""How many nodes a model needs (``plan_nodes``, ``benchlib plan --gpus-per-node``): seed
000's GLM-5.2 shape in BF16 needs two nodes of 8 × B200 (tp 8 × pp 2), in FP8 one; DeepSeek-V3
(the FP8 checkpoint) needs two nodes of 8 × H100 and one of 8 × H200 — SGLang's and vLLM's
own deployment guides say the same. Pipeline stages split the layers as vLLM does, and one
stage is exactly the plan."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.memory import PlanConfig, pipeline_fit, plan, plan_nodes, pp_partition

DATA = Path(__file__).resolve().parents[2] / "data" / "configs"
GLM = DATA / "glm_moe_dsa-glm52-shape.json"
DEEPSEEK = DATA / "corpus" / "deepseek-ai--deepseek-v3"


def _glm(weight_dtype: str, concurrency: int = 1) -> tuple[int | None, str]:
    found = plan_nodes(PlanConfig(model=GLM, gpu="B200", weight_dtype=weight_dtype,
                                  kv_cache_dtype="fp8", max_model_len=32768),
                       gpus_per_node=8, concurrency=concurrency)
    return (found.answer.nodes if found.answer else None), found.line


def test_glm52_bf16_needs_two_nodes_of_8_b200_and_fp8_one() -> None:
    nodes, line = _glm("bf16")
    assert nodes == 2
    assert line.startswith("needs 2 nodes of 8 × B200 (tp 8 × pp 2) for 1 request of "
                           "32,768 tokens")
    nodes, line = _glm("fp8")
    assert nodes == 1 and line.startswith("needs 1 node of 8 × B200 (tp 8 × pp 1)")


def test_concurrency_can_need_another_node() -> None:
    """FP8's one node holds ~38 requests of 32,768 tokens (MLA's cache is whole on each TP
    rank); 64 need the second node's layers to halve it."""
    assert _glm("fp8", 38)[0] == 1
    assert _glm("fp8", 64)[0] == 2


@pytest.mark.parametrize("gpu,nodes", [("H100-SXM", 2), ("H200", 1)])
def test_deepseek_v3_on_h100_and_h200(gpu: str, nodes: int) -> None:
    found = plan_nodes(PlanConfig(model=DEEPSEEK, gpu=gpu, max_model_len=32768),
                       gpus_per_node=8, concurrency=8)
    assert found.answer is not None and (found.answer.nodes, found.answer.tp,
                                         found.answer.pp) == (nodes, 8, nodes)
    if nodes == 2:
        assert "more than the 72.8 GiB the engine may use" in found.tried[0].why


def test_a_fixed_tp_spans_nodes_without_stages() -> None:
    """SGLang's layout (tp 16 over two nodes): weights split as well, but MLA's cache stays
    whole on each rank, so fewer requests fit than with two stages."""
    cfg = PlanConfig(model=DEEPSEEK, gpu="H100-SXM", max_model_len=32768)
    tp16 = plan_nodes(cfg.model_copy(update={"tp": 16}), gpus_per_node=8, concurrency=8)
    staged = plan_nodes(cfg, gpus_per_node=8, concurrency=8)
    assert tp16.answer is not None and staged.answer is not None
    assert (tp16.answer.nodes, tp16.answer.pp) == (2, 1)
    assert [f.nodes for f in tp16.tried] == [2]  # 16 does not divide one node's 8
    assert tp16.answer.max_concurrency < 0.6 * staged.answer.max_concurrency


def test_vllm_partition() -> None:
    """vllm.distributed.utils.get_pp_indices: the remainder before the last stage."""
    assert pp_partition(78, 2) == [39, 39]
    assert pp_partition(61, 2) == [31, 30]
    assert pp_partition(61, 4) == [15, 15, 16, 15]
    assert pp_partition(78, 4) == [19, 20, 20, 19]


def test_one_stage_is_the_plan_and_stages_split_it() -> None:
    cfg = PlanConfig(model=GLM, gpu="B200", num_gpus=8, tp=8, weight_dtype="fp8",
                     kv_cache_dtype="fp8", max_model_len=32768)
    p = plan(cfg)
    one = pipeline_fit(p, 1, concurrency=1)
    assert one.weights_gib_per_gpu == pytest.approx(p.weights.per_gpu_gib, abs=1e-3)
    assert one.kv_budget_gib_per_gpu == pytest.approx(p.kv_budget_gib, abs=1e-3)
    assert one.kv_cache_tokens == p.kv_cache_tokens and one.fits is p.fits
    two = pipeline_fit(p, 2, concurrency=1)
    # the heaviest stage holds about half the weights (and the embedding or the head)
    assert 0.5 < two.weights_gib_per_gpu / one.weights_gib_per_gpu < 0.53
    # each stage caches half the layers: more than twice the requests (more budget, too)
    assert two.max_concurrency > 2 * one.max_concurrency


def test_search_inputs_are_refused_by_name() -> None:
    cfg = PlanConfig(model=GLM, gpu="B200", num_gpus=8, max_model_len=32768)
    with pytest.raises(UsageError, match="--num-gpus: the node search sets the GPU count"):
        plan_nodes(cfg, gpus_per_node=8)
    with pytest.raises(UsageError, match="give --gpu or --gpu-memory-gib"):
        plan_nodes(PlanConfig(model=GLM, max_model_len=32768), gpus_per_node=8)


def test_too_big_for_the_nodes_tried() -> None:
    found = plan_nodes(PlanConfig(model=GLM, gpu="H100-SXM", weight_dtype="bf16",
                                  max_model_len=32768), gpus_per_node=8, max_nodes=2)
    assert found.answer is None and [f.nodes for f in found.tried] == [1, 2]
    assert found.line == ("does not fit 2 nodes of 8 × H100-SXM with 1 request of 32,768 "
                          "tokens")


def test_cli_prints_the_answer_and_every_node_count_tried() -> None:
    base = [sys.executable, "-m", "benchlib", "plan", "--model-config", str(GLM), "--gpu",
            "B200", "--weight-dtype", "bf16", "--kv-cache-dtype", "fp8", "--max-model-len",
            "32768", "--gpus-per-node", "8", "--concurrency", "1"]
    out = subprocess.run(base, capture_output=True, text=True, check=True).stdout
    assert "needs 2 nodes of 8 × B200 (tp 8 × pp 2)" in out
    assert "1 node   tp 8 × pp 1 (layers 78)" in out and "(layers 39+39)" in out
    data = json.loads(subprocess.run([*base, "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    assert (data["nodes"], data["tp"], data["pp"]) == (2, 8, 2)
    assert [t["fits"] for t in data["tried"]] == [False, True]
