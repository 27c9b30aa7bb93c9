"""benchlib.memory._kv in exact bytes and blocks, on stored configs: each dtype's bytes, MLA
with and without its indexer (and GLM-5.2's IndexShare), MTP layers, Mamba 1 and 2 states with
speculative tokens, the block a hybrid's state raises, a drafter's layers, vLLM's grouping
(with the 1.5× rule at its edge) and the two "GPU KV cache size" formulas at their switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.memory import (
    kv_capacity,
    kv_layout,
    legacy_token_report,
    load_model_config,
)
from benchlib.memory._arch import ModelArch
from benchlib.memory._kv import KVLayout, LayerCache, with_draft

DATA = Path(__file__).resolve().parents[2] / "data"
CORPUS = DATA / "configs" / "corpus"
GIB = 1024**3


def _arch(name: str) -> ModelArch:
    return load_model_config(CORPUS / name / "config.json")


@pytest.mark.parametrize("dtype,per_layer", [
    ("auto", 2 * 8 * 128 * 2), ("bf16", 2 * 8 * 128 * 2), ("fp16", 2 * 8 * 128 * 2),
    ("fp8", 2 * 8 * 128), ("fp8_e4m3", 2 * 8 * 128), ("fp8_e5m2", 2 * 8 * 128),
    ("nvfp4", 2 * 8 * 128 * 9 // 16)])  # half a byte + an fp8 scale per 16
def test_each_kv_dtypes_bytes_on_llama_8b(dtype: str, per_layer: int) -> None:
    lay = kv_layout(_arch("meta-llama--llama-3.1-8b-instruct"), kv_cache_dtype=dtype)
    assert lay.bytes_per_token == 32 * per_layer
    assert lay.kv_dtype == dtype and lay.dtype_bytes == per_layer / (2 * 8 * 128)
    assert lay.block_size == 16 and lay.notes == []
    assert [x.shape for x in lay.layers] == ["8x128"] * 32


def test_a_float32_checkpoint_is_cached_in_bf16() -> None:
    a = _arch("allenai--olmo-2-1124-7b")  # torch_dtype float32, 32 KV heads × 128
    assert a.torch_dtype == "float32"
    assert kv_layout(a).bytes_per_token == 32 * 2 * 32 * 128 * 2


def test_a_bad_dtype_or_tp_names_its_flag() -> None:
    a = _arch("meta-llama--llama-3.1-8b-instruct")
    with pytest.raises(UsageError) as e:
        kv_layout(a, kv_cache_dtype="int8")
    assert e.value.field == "--kv-cache-dtype" and "'int8': use one of auto, bf16" in str(e.value)
    with pytest.raises(UsageError) as e:
        kv_layout(a, tp=0)
    assert e.value.field == "--tp" and "must be >= 1" in str(e.value)
    assert kv_layout(a, tp=1).bytes_per_token == 32 * 2 * 8 * 128 * 2


def test_kv_heads_replicate_only_past_tp_equal_heads() -> None:
    a = _arch("meta-llama--llama-3.1-8b-instruct")
    assert kv_layout(a, tp=8).notes == []
    lay = kv_layout(a, tp=16)
    assert lay.bytes_per_token == 32 * 2 * 1 * 128 * 2
    assert lay.notes == ["tp 16 > 8 KV heads: each rank keeps a full KV head (replicated), "
                         "so KV per GPU stops shrinking"]


def test_deepseek_v3_mla_its_mtp_layer_and_tp() -> None:
    a = _arch("deepseek-ai--deepseek-v3")  # 61 layers, latent 512 + rope 64, 1 MTP layer
    assert kv_layout(a).bytes_per_token == 61 * 576 * 2 and kv_layout(a).notes == []
    assert kv_layout(a, kv_cache_dtype="fp8").bytes_per_token == 61 * 576
    mtp = kv_layout(a, mtp=True)
    assert mtp.bytes_per_token == 62 * 576 * 2 and len(mtp.layers) == 62
    assert mtp.notes == ["1 MTP layer(s) keep their own cache beside the model's"]
    eight = kv_layout(a, tp=8)
    assert eight.bytes_per_token == 61 * 576 * 2
    assert eight.notes == ["MLA cache is replicated on all 8 ranks (not split by TP)"]


def test_glm_5_2s_index_share_keeps_21_indexer_keys() -> None:
    """IndexShare, freq 4 and offset 3: layers 0, 1 and 2, 6, …, 74 build an indexer
    (max(i − 2, 0) % 4 == 0); each adds 128 fp8 + one 4-byte scale per token; an MTP layer
    always builds one. The layers' pages differ, yet they form one group."""
    a = load_model_config(DATA / "vllm_logs" / "examples" / "glm-5.2")
    assert a.mla is not None
    shared = a.model_copy(update={"mla": a.mla.model_copy(update={
        "index_topk_freq": 4, "index_skip_topk_offset": 3})})
    lay = kv_layout(shared)
    assert lay.bytes_per_token == 78 * 1152 + 21 * 132
    assert lay.notes == ["sparse-attention indexer keys counted with the MLA cache "
                         "(21 of 78 layers build an indexer)"]
    assert kv_layout(shared, mtp=True).bytes_per_token == 79 * 1152 + 22 * 132
    cap = kv_capacity(lay, GIB, max_model_len=4096)
    assert (cap.num_groups, cap.group_size, cap.padding_layers) == (1, 78, 0)
    assert cap.bytes_per_block == 16 * (78 * 1152 + 21 * 132)
    assert cap.num_blocks == GIB // (16 * (78 * 1152 + 21 * 132))
    assert cap.blocks_per_request == 4096 // 16


def test_nemotron_3_nanos_mamba2_state_and_raised_block() -> None:
    """23 Mamba2 layers: conv 6144 channels × 3 positions (bf16) + SSM 4096 × 128 (fp32);
    6 attention layers of 2 KV heads × 128; the 23 MoE-only layers keep nothing."""
    a = _arch("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16")
    state = 6144 * 3 * 2 + 4096 * 128 * 4
    lay = kv_layout(a)
    assert lay.state_bytes_per_request == 23 * state == 49_082_368
    assert lay.bytes_per_token == 6 * 2 * 2 * 128 * 2 and len(lay.layers) == 29
    assert lay.block_size == 16 * -(-state // (16 * 1024)) == 2096
    assert lay.notes == ["attention block raised to 2096 tokens so a page holds one "
                         "2.04 MiB recurrent state"]
    assert kv_layout(a, hybrid_block_alignment=128).block_size == 128 * 17
    assert kv_layout(a, block_size=32).block_size == 32 * 66
    spec = kv_layout(a, num_speculative_tokens=2)
    assert spec.state_bytes_per_request == 23 * (6144 * 5 * 2 + 4096 * 128 * 4)
    assert {x.spec_blocks for x in spec.layers if x.kind == "mamba"} == {2}
    assert {x.spec_blocks for x in spec.layers if x.kind == "full"} == {0}


def test_nemotron_3_nanos_capacity_groups() -> None:
    """6 attention layers set the group size; 23 state layers make 4 groups (one padding
    layer); a request holds ceil(8192 / 2096) attention blocks and one per state group."""
    lay = kv_layout(_arch("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16"))
    cap = kv_capacity(lay, 10 * GIB, max_model_len=8192)
    assert (cap.num_groups, cap.group_size, cap.padding_layers) == (5, 6, 1)
    assert cap.bytes_per_block == 6 * 2096 * 1024
    assert cap.num_blocks == 10 * GIB // (6 * 2096 * 1024) == 833
    assert cap.blocks_per_request == 4 + 4
    assert cap.max_concurrency == 833 / 8
    assert cap.kv_cache_tokens == int(833 / 8 * 8192)
    assert cap.kv_cache_tokens_legacy == 833 // 5 * 2096
    assert cap.budget_bytes == 10 * GIB and cap.max_model_len == 8192


def test_jambas_mamba1_state_in_the_model_dtype() -> None:
    a = _arch("ai21labs--jamba-v0.1")  # 28 Mamba layers: conv 8192 × 3, SSM 8192 × 16
    lay = kv_layout(a)
    assert lay.state_bytes_per_request == 28 * (8192 * 3 * 2 + 8192 * 16 * 2)
    assert lay.block_size == 80


def test_qwen3_5_gdn_conv_state_grows_with_speculative_tokens() -> None:
    a = _arch("qwen--qwen3.5-9b")
    conv = (2 * 16 * 128 + 32 * 128) * (3 + 4) * 2
    lay = kv_layout(a, num_speculative_tokens=4)
    assert lay.state_bytes_per_request == 24 * (conv + 32 * 128 * 128 * 4)
    cap = kv_capacity(lay, GIB, max_model_len=4096)
    # 8 attention layers; 24 GDN layers in 3 groups of 8, each holding 1 + 4 state blocks
    assert (cap.num_groups, cap.group_size) == (4, 8)
    assert cap.blocks_per_request == -(-4096 // lay.block_size) + 3 * 5


def test_a_drafters_layers_join_the_targets() -> None:
    target = kv_layout(_arch("meta-llama--llama-3.1-8b-instruct"))
    draft = kv_layout(_arch("meta-llama--llama-3.2-1b-instruct"))  # 16 layers, 8 × 64
    both = with_draft(target, draft)
    assert both.bytes_per_token == 32 * 4096 + 16 * 2048
    assert len(both.layers) == 48 and both.layers[-1].shape == "8x64"
    assert both.notes == ["the draft model's 16 layers share the KV budget"]
    assert both.block_size == 16 and both.sliding_bytes_per_token == 0
    dflash = with_draft(target, draft, non_causal=True)
    assert dflash.layers[-1].shape == "8x64+non-causal" and dflash.layers[0].shape == "8x128"
    # all full attention: one group whose block holds every layer's page (head sizes differ)
    cap = kv_capacity(both, GIB, max_model_len=4096)
    assert (cap.num_groups, cap.group_size, cap.padding_layers) == (1, 48, 0)
    assert cap.bytes_per_block == 16 * (32 * 4096 + 16 * 2048)


def test_a_drafters_state_and_sliding_bytes_add_up() -> None:
    target = kv_layout(_arch("google--gemma-2-2b-it"))
    draft = kv_layout(_arch("qwen--qwen3.5-9b"))
    both = with_draft(target, draft)
    assert both.sliding_bytes_per_token == target.sliding_bytes_per_token == 13 * 4096
    assert both.state_bytes_per_request == draft.state_bytes_per_request


def _layout(full: int, sliding: int, window: int = 64) -> KVLayout:
    layers = ([LayerCache(kind="full", bytes_per_token=1024, shape="2x128")] * full
              + [LayerCache(kind="sliding", bytes_per_token=1024, window=window,
                            shape="2x128")] * sliding)
    return KVLayout(layers=layers, block_size=16, kv_dtype="auto", dtype_bytes=2.0,
                    bytes_per_token=1024 * full, sliding_bytes_per_token=1024 * sliding,
                    state_bytes_per_request=0, notes=[])


@pytest.mark.parametrize("full,sliding,groups,size,padding", [
    (4, 6, 3, 4, 2),   # 6 is 1.5 × 4: groups of the smaller count
    (5, 7, 2, 7, 2),   # 7 < 1.5 × 5: one group of 7 each, the full one padded by 2
    (4, 4, 2, 4, 0)])
def test_the_group_size_rule_at_its_edge(full: int, sliding: int, groups: int, size: int,
                                         padding: int) -> None:
    cap = kv_capacity(_layout(full, sliding), GIB, max_model_len=1024)
    assert (cap.num_groups, cap.group_size, cap.padding_layers) == (groups, size, padding)
    assert cap.bytes_per_block == size * 16 * 1024


@pytest.mark.parametrize("max_len,batched,blocks", [
    (1024, 8192, 64 + 65),               # capped at the context: 1024 / 16 + 1
    (16384, 2048, 1024 + 133),           # ceil((64 − 1 + 2048) / 16) + 1
    (16384, 17, 1024 + 6)])              # ceil((64 − 1 + 17) / 16) + 1 = 5 + 1
def test_a_sliding_request_holds_window_plus_a_batch(max_len: int, batched: int,
                                                     blocks: int) -> None:
    cap = kv_capacity(_layout(2, 2), GIB, max_model_len=max_len,
                      max_num_batched_tokens=batched)
    assert cap.blocks_per_request == blocks


def test_a_budget_below_one_block_holds_nothing() -> None:
    cap = kv_capacity(_layout(1, 0), 16 * 1024 - 1, max_model_len=16)
    assert cap.num_blocks == 0 and cap.max_concurrency == 0.0
    one = kv_capacity(_layout(1, 0), 16 * 1024, max_model_len=16)
    assert one.num_blocks == 1 and one.max_concurrency == 1.0 and one.kv_cache_tokens == 16


@pytest.mark.parametrize("version,report", [
    ("0.11.9", "blocks"), ("0.11", "blocks"), ("0.9.2", "blocks"), ("0.12.0", "concurrency"),
    ("0.12", "concurrency"), ("1.0", "concurrency"), ("main", "concurrency"),
    ("0", "concurrency")])
def test_the_kv_cache_size_formula_switches_at_0_12(version: str, report: str) -> None:
    assert legacy_token_report(version) == report
