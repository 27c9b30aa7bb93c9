"""benchlib.memory._overhead: each term as vLLM 0.26.0's source computes it, on real configs
(the corpus): the runner rule, the defaults, the MoE workspace, MLA's profile transient, and
the sampler's profile on each runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.memory import default_utilization, load_model_config, model_runner
from benchlib.memory._overhead import (
    CUBLAS_WORKSPACE,
    GIB,
    forward_transient,
    moe_workspace,
    overhead_model,
)

CORPUS = Path(__file__).resolve().parents[2] / "data" / "configs" / "corpus"


def _arch(name: str):  # type: ignore[no-untyped-def]
    return load_model_config(CORPUS / name / "config.json")


@pytest.mark.parametrize("version,util", [("0.10.1", 0.9), ("0.20", 0.9), ("0.21", 0.92),
                                          ("0.26.0", 0.92), ("0.32.0", 0.92)])
def test_the_versions_default_utilization(version: str, util: float) -> None:
    assert default_utilization(version) == util


@pytest.mark.parametrize("name,spec,runner", [
    ("meta-llama--llama-3.1-8b-instruct", None, "v2"),
    ("meta-llama--llama-3.1-8b-instruct", "draft", "v1"),
    ("meta-llama--llama-3.1-8b-instruct", "ngram", "v1"),
    ("meta-llama--llama-3.1-8b-instruct", "eagle3", "v2"),
    ("qwen--qwen3-30b-a3b", None, "v1"),
    ("zai-org--glm-4.7-flash", None, "v1"),
    ("deepseek-ai--deepseek-v2-lite-chat", None, "v2"),
    ("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16", None, "v1"),
    ("qwen--qwen3.5-9b", None, "v1"),
])
def test_the_model_runner_follows_vllm_0_26s_rule(name: str, spec: str | None,
                                                  runner: str) -> None:
    assert model_runner(_arch(name), "0.26.0", spec) == runner
    assert model_runner(_arch(name), "0.24", spec) == "v1"
    assert model_runner(_arch(name), "0.12", spec) == "legacy"


def test_moe_workspace_is_sized_by_batched_tokens_and_top_k_not_experts() -> None:
    a = _arch("qwen--qwen3-30b-a3b")  # H 2048, I 768, top-8 of 128
    assert moe_workspace(a, 8192, 1) == 2 * 8192 * 8 * (2048 + 2048) == 512 * 2**20
    assert moe_workspace(_arch("meta-llama--llama-3.1-8b-instruct"), 8192, 1) == 0


def test_mla_profile_keeps_a_workspace_of_65536_rows() -> None:
    a = _arch("zai-org--glm-4.7-flash")
    assert a.mla is not None
    short = forward_transient(a, 8192, 1, max_model_len=4096)
    rows = 65536 * a.num_heads * (a.mla.qk_nope_head_dim + a.mla.v_head_dim) * 2
    assert short >= rows  # the transient is part of the attention block's live set


def test_the_sampler_profile_per_runner() -> None:
    """V2 profiles a greedy sampler (the bf16 logits); V1 keeps fp32 copies (14·N·V) and a
    Triton buffer of SMs × V; speculating on V1, the rejection sampler's 30·N·V."""
    a = _arch("meta-llama--llama-3.1-8b-instruct")
    v = a.vocab_size
    v2 = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=139.8)
    assert v2.runner == "v2" and v2.cuda_graph_gib == 0.0
    assert v2.parts["sampler"] * GIB == pytest.approx(2 * 4096 * 8192 + 2 * 1024 * v, rel=1e-3)
    spec = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=139.8,
                          speculative="ngram")
    assert spec.parts["sampler"] * GIB == pytest.approx(2 * 4096 * (8192 + 2048)
                                                        + 30 * 1024 * v, rel=1e-3)
    assert spec.parts["topk_buffer"] * GIB == pytest.approx(132 * v * 4, rel=1e-3)
    assert spec.cuda_graph_gib > 0
    assert spec.activation_gib * GIB == pytest.approx(
        CUBLAS_WORKSPACE + 132 * v * 4 + spec.parts["sampler"] * GIB, rel=1e-3)


def test_small_gpus_profile_fewer_tokens_and_older_vllm_keeps_its_fitted_model() -> None:
    a = _arch("qwen--qwen3-8b")
    assert overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=44.0).max_num_seqs == 256
    legacy = overhead_model(a, tp=1, vllm_version="0.12", memory_gib=79.18)
    assert legacy.runner == "legacy" and legacy.cuda_graph_gib == 0.0


def test_enforce_eager_takes_no_cuda_graph_estimate() -> None:
    """--enforce-eager captures no graph, so vLLM takes no estimate off the KV budget; with
    graphs, the V1 runner takes the measured one."""
    a = _arch("qwen--qwen3-30b-a3b")
    graphs = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=139.8)
    eager = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=139.8, cuda_graphs=False)
    assert graphs.runner == eager.runner == "v1"
    assert graphs.cuda_graph_gib > 0 and eager.cuda_graph_gib == 0.0
    assert graphs.total_gib - eager.total_gib == pytest.approx(graphs.cuda_graph_gib)
