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
    MEASURED,
    cuda_graph_estimate,
    forward_transient,
    moe_workspace,
    overhead_model,
)

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests" / "data" / "configs" / "corpus"


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


@pytest.mark.parametrize("seqs,rows", [(1, 0), (7, 0), (8, 8), (64, 64), (100, 128),
                                       (128, 128), (129, 132), (256, 132), (1024, 132)])
def test_the_triton_top_k_buffer_has_a_row_per_program(seqs: int, rows: int) -> None:
    """topk_topp_sampler.py sorts fewer than 8 rows with PyTorch (no buffer);
    topk_topp_triton.py runs min(SMs, N) programs, the buffer rounded up to a power of two
    and capped at the SMs (132 on an H200). One request keeps no row, not 132 (Qwen3.5-27B on
    an H100: the plan's 0.59 GiB held 0.12 GiB the engine never allocates)."""
    from benchlib.memory import find_gpu

    a = _arch("meta-llama--llama-3.1-8b-instruct")
    o = overhead_model(a, tp=1, vllm_version="0.26.0", memory_gib=139.8, gpu=find_gpu("H200"),
                       max_num_seqs=seqs, speculative="ngram")
    assert o.parts["topk_buffer"] == round(rows * a.vocab_size * 4 / GIB, 4)


def test_an_eagle3_or_dflash_drafter_keeps_the_targets_hidden_states() -> None:
    """Each hidden state the drafter reads is a new [T, H] bf16 tensor kept to the end of the
    target's forward (interfaces.py _maybe_add_hidden_state), so it stands beside the
    largest live set: n_aux·2·T·H more, on top of the target's, not of the drafter's."""
    a = _arch("meta-llama--llama-3.1-8b-instruct")
    kw = dict(tp=1, vllm_version="0.26.0", memory_gib=139.8, max_num_seqs=1,
              max_model_len=4096, speculative="dflash")
    plain = overhead_model(a, **kw)  # type: ignore[arg-type]
    five = overhead_model(a, aux_hidden_states=5, **kw)  # type: ignore[arg-type]
    tokens = plain.max_num_batched_tokens
    assert tokens == 4096
    assert (five.parts["forward"] - plain.parts["forward"]) * GIB == pytest.approx(
        5 * 2 * tokens * a.hidden_size, abs=GIB * 1e-4)
    assert five.activation_gib > plain.activation_gib


def test_which_hidden_states_a_drafter_reads(tmp_path: Path) -> None:
    """vLLM 0.26.0's order: eagle_aux_hidden_state_layer_ids, else a non-empty eagle_config's
    ids, else DFlash's target_layer_ids (each + 1), else the model's three defaults; an
    EAGLE-3 head that says use_aux_hidden_state: false keeps none; a state taken after the last
    layer stands beside no layer's MLP. Other methods keep none."""
    import json

    from benchlib.memory._draft import aux_hidden_states

    def folder(name: str, config: dict[str, object]) -> Path:
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
        return tmp_path / name

    dflash = REPO / "params" / "models" / "z-lab--qwen3.5-27b-dflash"
    assert aux_hidden_states(dflash, "dflash", 64) == 5
    assert aux_hidden_states(dflash, "draft", 64) == 0
    assert aux_hidden_states(folder("bare", {}), "eagle3", 32) == 3
    assert aux_hidden_states(folder("ids", {"eagle_aux_hidden_state_layer_ids": [1, 8, 16, 31]}),
                             "eagle3", 32) == 4
    assert aux_hidden_states(folder("last", {"dflash_config": {"target_layer_ids": [1, 31]}}),
                             "dflash", 32) == 1  # 31 + 1 is after the last layer
    assert aux_hidden_states(folder("eagle", {"eagle_config": {
        "eagle_aux_hidden_state_layer_ids": [2, 10]}}), "eagle3", 32) == 2
    assert aux_hidden_states(folder("ngram", {}), "ngram", 32) == 0
    assert aux_hidden_states(folder("eagle1-like", {"eagle_config": {
        "use_aux_hidden_state": False}}), "eagle3", 32) == 0
    # an empty eagle_config is no config (vLLM's truth test): DFlash's ids stand
    assert aux_hidden_states(folder("empty", {"eagle_config": {}, "dflash_config": {
        "target_layer_ids": [1, 8]}}), "dflash", 32) == 2


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


def test_the_cuda_graph_estimate_is_twice_the_split_buffer_plus_the_residual() -> None:
    """0.26.0's profile_cudagraph_memory under FULL graphs: FlashAttention's 32-split fp32
    buffer (heads/TP × the largest FULL size × (D_v + 1) × 4 bytes a split), held twice, plus
    the measured residual. Held to the three estimates on record from the H200: 0.64 GiB
    (Qwen3-30B-A3B, 32 heads × 128, sizes up to 512; the run the residual comes from), 1.64 GiB
    (GLM-4.7-Flash, MLA: 20 heads × kv_lora_rank 512; the residual the source does not split
    leaves 0.25 GiB) and 0.07 GiB (Qwen3.5-27B, DFlash k=7 at one sequence: FULL sizes stop at
    8, so the buffer is small and the residual dominates)."""
    residual = float(MEASURED["cuda_graph_residual_gib"]["value"])

    def split(heads: int, size: int, d_v: int) -> float:
        return 32 * heads * size * (d_v + 1) * 4 / GIB

    moe = cuda_graph_estimate(_arch("qwen--qwen3-30b-a3b"), tp=1, seqs=1024, tokens=8192)
    assert moe == pytest.approx(2 * split(32, 512, 128) + residual)
    assert moe == pytest.approx(0.64, abs=0.005)
    mla = cuda_graph_estimate(_arch("zai-org--glm-4.7-flash"), tp=1, seqs=1024, tokens=8192)
    assert mla == pytest.approx(2 * split(20, 512, 512) + residual)  # kv_lora_rank, not 64
    assert 1.64 - mla == pytest.approx(0.25, abs=0.01)
    qwen35 = load_model_config(REPO / "params" / "models" / "qwen--qwen3.5-27b")
    assert (qwen35.num_heads, qwen35.head_dim) == (24, 256)
    one = cuda_graph_estimate(qwen35, tp=1, seqs=1, tokens=4096, k=7)
    assert one == pytest.approx(2 * split(24, 8, 256) + residual)
    assert abs(one - 0.07) < 0.08
    # TP splits the heads; fewer sequences cap the largest FULL size (2·seqs, then seqs)
    assert cuda_graph_estimate(_arch("qwen--qwen3-30b-a3b"), tp=4, seqs=1024, tokens=8192
                               ) == pytest.approx(2 * split(8, 512, 128) + residual)
    assert cuda_graph_estimate(_arch("qwen--qwen3-30b-a3b"), tp=1, seqs=100, tokens=8192
                               ) == pytest.approx(2 * split(32, 100, 128) + residual)
    assert cuda_graph_estimate(_arch("qwen--qwen3-30b-a3b"), tp=1, seqs=1024, tokens=256
                               ) == pytest.approx(2 * split(32, 256, 128) + residual)
    # speculation: sizes in steps of 1 + k, FULL ones up to seqs × (1 + k)
    assert cuda_graph_estimate(_arch("qwen--qwen3-30b-a3b"), tp=1, seqs=10, tokens=8192, k=2
                               ) == pytest.approx(2 * split(32, 30, 128) + residual)
