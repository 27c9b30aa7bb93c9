"""benchlib.memory._kv at its edges: a TP that does not divide the recurrent channels, index
keys of other widths, notes with and without their counts, a non-MLA model's MTP layer, a
parallel hybrid's states, a layout without attention, and block counts at ceil's boundaries.
Each case is a stored config (tests/data) or transformers' own defaults, changed in one field
where no checkpoint has the edge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from transformers import AutoConfig

from benchlib import UsageError
from benchlib.memory import kv_capacity, kv_layout, load_model_config
from benchlib.memory._arch import ModelArch
from benchlib.memory._arch_read import arch_from_dict
from benchlib.memory._kv import KVLayout, LayerCache, with_draft
from benchlib.memory._sglang import sglang_pool

DATA = Path(__file__).resolve().parents[2] / "data"
CORPUS = DATA / "configs" / "corpus"
GIB = 1024**3


def _arch(name: str) -> ModelArch:
    return load_model_config(CORPUS / name / "config.json")


def _glm(**mla: Any) -> ModelArch:
    a = load_model_config(DATA / "vllm_logs" / "examples" / "glm-5.2")
    assert a.mla is not None
    return a.model_copy(update={"mla": a.mla.model_copy(update=mla)})


def test_a_bad_tp_says_exactly_what_it_must_be() -> None:
    with pytest.raises(UsageError) as e:
        kv_layout(_arch("qwen--qwen3-8b"), tp=0)
    assert (e.value.field, e.value.message) == ("--tp", "must be >= 1")


def test_recurrent_channels_round_down_per_rank() -> None:
    """Qwen3.5-9B at TP 3: 8192 conv channels → 2730, 32 value heads → 10; Nemotron-3-Nano
    at TP 5: 6144 conv channels → 1228, 4096 SSM channels → 819."""
    gdn = kv_layout(_arch("qwen--qwen3.5-9b"), tp=3)
    assert gdn.state_bytes_per_request == 24 * (2730 * 3 * 2 + 10 * 128 * 128 * 4)
    mamba = kv_layout(_arch("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16"), tp=5)
    assert mamba.state_bytes_per_request == 23 * (1228 * 3 * 2 + 819 * 128 * 4)


@pytest.mark.parametrize("index,key", [(128, 128 + 4), (256, 256 + 8), (192, 192 + 4)])
def test_an_index_key_is_fp8_with_a_scale_per_128(index: int, key: int) -> None:
    assert kv_layout(_glm(index_head_dim=index)).bytes_per_token == 78 * (1152 + key)


def test_the_fp8_mla_tile_scales_count_whole_tiles() -> None:
    """fp8_ds_mla: latent bytes + 4 per whole 128-wide tile + the bf16 rope (320 → 2 tiles)."""
    lay = kv_layout(_glm(kv_lora_rank=320), kv_cache_dtype="fp8")
    assert lay.bytes_per_token == 78 * (320 + 4 * 2 + 2 * 64 + 128 + 4)


def test_the_indexer_note_counts_layers_only_when_some_lack_one() -> None:
    assert kv_layout(_glm()).notes == ["sparse-attention indexer keys counted with the MLA cache"]


def test_two_ranks_already_replicate_mla() -> None:
    lay = kv_layout(_arch("deepseek-ai--deepseek-v3"), tp=2)
    assert lay.notes == ["MLA cache is replicated on all 2 ranks (not split by TP)"]


def test_every_mtp_layer_of_an_index_share_model_builds_its_indexer() -> None:
    """Two MTP layers (78 and 79) both keep an index key; layer 77 would not."""
    a = _glm(index_topk_freq=4, index_skip_topk_offset=3).model_copy(update={"mtp_layers": 2})
    assert kv_layout(a, mtp=True).bytes_per_token == 80 * 1152 + 23 * 132


def test_a_non_mla_models_mtp_layer_is_full_attention() -> None:
    a = _arch("qwen--qwen3.5-9b")  # 8 full-attention layers of 4 KV heads × 256, 1 MTP layer
    lay = kv_layout(a, mtp=True)
    assert lay.bytes_per_token == 9 * 2 * 4 * 256 * 2 and len(lay.layers) == 33
    assert (lay.layers[-1].kind, lay.layers[-1].shape) == ("full", "4x256")


def _falcon_h1() -> ModelArch:
    return arch_from_dict(AutoConfig.for_model("falcon_h1").to_dict(), name="falcon_h1")


def test_a_parallel_hybrid_keeps_a_state_beside_every_attention_layer() -> None:
    """Falcon-H1's defaults: 32 layers, each attention (8 × 128) and Mamba2 (conv 1536 × 3,
    SSM 1024 × 256, bf16)."""
    a = _falcon_h1()
    lay = kv_layout(a, num_speculative_tokens=1)
    state = 1536 * 4 * 2 + 1024 * 256 * 2
    assert lay.state_bytes_per_request == 32 * state
    assert [x.spec_blocks for x in lay.layers if x.kind == "mamba"] == [1] * 32
    one_mamba = a.model_copy(update={"layer_kinds": ("mamba", *a.layer_kinds[1:])})
    assert sum(x.kind == "mamba" for x in kv_layout(one_mamba).layers) == 32


def test_state_layers_add_nothing_per_token() -> None:
    """SGLang's pool sums every layer's bytes per token: the Mamba layers' are 0."""
    for a, per_token in ((_arch("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16"), 6 * 1024),
                         (_falcon_h1(), 32 * 2 * 8 * 128 * 2)):
        pool = sglang_pool(a, weights_gib=1.0, gpu_memory_gib=139.8, mem_fraction_static=0.8)
        assert pool is not None and pool.cell_bytes == per_token


def test_sliding_layers_carry_their_head_shape() -> None:
    lay = kv_layout(load_model_config(DATA / "vllm_logs" / "gpt-oss-120b-a100-tp4-u080"))
    assert {(x.kind, x.shape, x.window) for x in lay.layers} == {
        ("sliding", "8x64", 128), ("full", "8x64", None)}


def test_an_mla_hybrids_block_counts_the_index_key() -> None:
    """Kimi-Linear with a 128-wide index key: the attention token is 1152 + 132 bytes."""
    a = load_model_config(DATA / "vllm_logs" / "kimi-linear-48b-awq-3090-tp2")
    assert a.mla is not None
    keyed = a.model_copy(update={"mla": a.mla.model_copy(update={"index_head_dim": 128})})
    lay = kv_layout(keyed, tp=2)
    state = 3 * (32 * 128 * 3 // 2) * 2 + 16 * 128 * 128 * 4
    assert lay.block_size == 64 * -(-state // (64 * 1284))


def test_a_layout_without_attention_holds_no_blocks() -> None:
    """Bamba with no attention index: every layer a Mamba state, no attention page to pad it
    to; the plan counts no blocks rather than guess a page."""
    raw = {**AutoConfig.for_model("bamba").to_dict(), "attn_layer_indices": []}
    lay = kv_layout(arch_from_dict(raw, name="bamba"))
    assert {x.kind for x in lay.layers} == {"mamba"}
    assert lay.block_size == 16 and lay.notes == []
    cap = kv_capacity(lay, GIB, max_model_len=4096)
    assert (cap.num_blocks, cap.bytes_per_block, cap.max_concurrency) == (0, 0, 0.0)


def test_a_drafters_sliding_layers_add_up() -> None:
    gemma = kv_layout(_arch("google--gemma-2-2b-it"))
    both = with_draft(gemma, gemma)
    assert both.sliding_bytes_per_token == 2 * 13 * 4096


def _layout(*layers: LayerCache) -> KVLayout:
    return KVLayout(layers=list(layers), block_size=16, kv_dtype="auto", dtype_bytes=2.0,
                    bytes_per_token=0, sliding_bytes_per_token=0, state_bytes_per_request=0,
                    notes=[])


def _sliding(window: int | None, per_token: int = 1024, shape: str = "2x128") -> LayerCache:
    return LayerCache(kind="sliding", bytes_per_token=per_token, window=window, shape=shape)


@pytest.mark.parametrize("window,batched,blocks", [
    (64, 2, 6),        # ceil((64 − 1 + 2) / 16) + 1: 65 tokens need a fifth block
    (65, None, 517),   # the default 8192 batched tokens: (65 − 1 + 8192) / 16 = 516, + 1
    (None, 8192, 1250)])  # no window: the whole context, ceil(20000 / 16)
def test_sliding_blocks_at_ceils_boundary(window: int | None, batched: int | None,
                                          blocks: int) -> None:
    kw = {} if batched is None else {"max_num_batched_tokens": batched}
    cap = kv_capacity(_layout(_sliding(window)), GIB, max_model_len=20000, **kw)
    assert cap.blocks_per_request == blocks


def test_sliding_layers_of_two_shapes_form_two_groups() -> None:
    cap = kv_capacity(_layout(_sliding(64), _sliding(64, 512, "1x128")), GIB, max_model_len=64)
    assert (cap.num_groups, cap.group_size) == (2, 1)
    assert cap.bytes_per_block == 16 * 1024


def test_a_zero_context_counts_no_requests() -> None:
    full = LayerCache(kind="full", bytes_per_token=1024, shape="2x128")
    cap = kv_capacity(_layout(full), GIB, max_model_len=0)
    assert (cap.blocks_per_request, cap.max_concurrency, cap.kv_cache_tokens) == (0, 0.0, 0)


def test_any_attention_token_raises_a_hybrids_block() -> None:
    """Even where the latent and the index key are the same size (2 + 64 latent channels in
    bf16 = 132 bytes = a 128-wide key and its scale), the page holds both, and the state."""
    a = load_model_config(DATA / "vllm_logs" / "kimi-linear-48b-awq-3090-tp2")
    assert a.mla is not None
    odd = a.model_copy(update={"mla": a.mla.model_copy(update={"kv_lora_rank": 2,
                                                               "index_head_dim": 128})})
    state = 3 * (32 * 128 * 3 // 2) * 2 + 16 * 128 * 128 * 4
    assert kv_layout(odd, tp=2).block_size == 64 * -(-state // (64 * 264))
