"""Seed 000 on eight H200s (params/seeds/000-glm-kimi-8xh200.yaml): the plan's figures per GPU
for GLM-5.2-FP8 (MTP off and on) and Kimi-K2.6 INT4 at TP 8, FP8 KV, 0.90 and 32,768 tokens,
computed from the kept configs (params/models/*/SOURCE.md says where each comes from).

Two of them are held against the checkpoint itself: the parameter count the kept GLM config
gives is, to the parameter, the one a public write-up derived from GLM-5.2-FP8's safetensors
headers, which only holds when 57 of the 78 layers build no indexer (``index_topk_freq`` 4), as
vLLM 0.26.0 builds them; and the FP8 weights with the MTP layer are the checkpoint's bytes on
disk within 0.01 %."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchlib.memory import PlanConfig, load_model_config, plan
from benchlib.memory._kv import KVLayout, LayerCache, kv_capacity

MODELS = Path(__file__).resolve().parents[3] / "params" / "models"
GLM = MODELS / "zai-org--glm-5.2-fp8"
KIMI = MODELS / "moonshotai--kimi-k2.6"
KIMI_TEXT = MODELS / "moonshotai--kimi-k2.6-text"  # what the recipe serves (SOURCE.md: why)
GIB = 2**30


def _plan(model: Path, speculative: str | None = None) -> Any:
    return plan(PlanConfig(model=model, gpu="H200", num_gpus=8, tp=8,
                           gpu_memory_utilization=0.90, kv_cache_dtype="fp8",
                           max_model_len=32768, vllm_version="0.26.0", speculative=speculative))


def test_glm_builds_an_indexer_on_21_of_78_layers_as_vllm_does() -> None:
    a = load_model_config(GLM)
    assert a.mla is not None
    own = [i for i in range(a.num_layers) if a.mla.has_indexer(i, a.num_layers)]
    assert own == [0, 1, 2, *range(6, 78, 4)] and len(own) == 21
    assert a.mla.has_indexer(78, a.num_layers)  # the MTP layer always has one


def test_glm_parameters_are_the_checkpoints_to_the_parameter() -> None:
    p = _plan(GLM)
    assert p.params.total == 743_377_000_704
    assert p.params.mtp == 9_952_920_320
    # "total parameters 753,329,921,024 (753.33 B)", read from the safetensors headers
    assert p.params.total + p.params.mtp == 753_329_921_024


def test_glm_mtp_off_per_gpu() -> None:
    s = _plan(GLM).summary()
    assert s["weights_gib_per_gpu"] == pytest.approx(88.02, abs=0.01)
    # MLA in vLLM's fp8_ds_mla (656 B) on 78 layers, the indexer key (132 B) on 21
    assert s["kv_bytes_per_token"] == 78 * 656 + 21 * 132 == 53_940
    assert s["kv_budget_gib_per_gpu"] == pytest.approx(33.13, abs=0.01)
    assert s["kv_cache_tokens"] == pytest.approx(659_520, rel=1e-3)
    assert s["max_concurrency"] == pytest.approx(20.13, abs=0.01)
    assert s["decode_floor_ms"] == pytest.approx(1.72, abs=0.01)


def test_glm_mtp_on_loads_the_mtp_layer_and_its_cache() -> None:
    p = _plan(GLM, "mtp")
    s = p.summary()
    # the checkpoint on disk: 755,632,050,320 B with the MTP layer, scales and BF16 tensors
    assert p.weights.total_bytes == pytest.approx(755_632_050_320, rel=1e-4)
    assert s["weights_gib_per_gpu"] == pytest.approx(89.18, abs=0.01)
    assert s["kv_bytes_per_token"] == 53_940 + 656 + 132
    assert s["kv_cache_tokens"] == pytest.approx(580_864, rel=1e-3)
    assert not any("MTP" in w for w in p.warnings)


def test_kimi_int4_per_gpu() -> None:
    s = _plan(KIMI).summary()
    assert s["total_params"] == pytest.approx(1.0268e12, rel=1e-4)
    assert s["weights_gib_total"] == pytest.approx(553.65, abs=0.01)  # seed 000's du: 555G
    assert s["weights_gib_per_gpu"] == pytest.approx(70.98, abs=0.01)
    assert s["kv_bytes_per_token"] == 61 * 576 == 35_136  # plain MLA, FP8: no ds_mla packing
    assert s["kv_cache_tokens"] == pytest.approx(1_521_008, rel=1e-3)
    assert s["max_concurrency"] == pytest.approx(46.42, abs=0.01)
    assert s["decode_floor_ms"] == pytest.approx(1.50, abs=0.01)


def test_kimi_language_model_alone_per_gpu() -> None:
    whole, text = _plan(KIMI), _plan(KIMI_TEXT)
    s = text.summary()
    assert s["weights_gib_per_gpu"] == pytest.approx(70.88, abs=0.01)
    assert s["kv_bytes_per_token"] == 35_136
    assert s["kv_cache_tokens"] == pytest.approx(1_524_000, rel=1e-3)
    assert s["decode_floor_ms"] == pytest.approx(1.48, abs=0.01)
    # the only difference is the vision tower: 0.42 B parameters, in BF16
    gap = whole.weights.total_bytes - text.weights.total_bytes
    assert gap == pytest.approx(2 * whole.arch.tower_params, rel=1e-3)
    assert not text.warnings


def test_one_attention_type_with_two_page_sizes_is_one_group() -> None:
    """vLLM's UniformTypeKVCacheSpecs: a block costs the sum of every layer's page."""
    layers = [LayerCache(kind="mla", bytes_per_token=100)] * 3 + \
        [LayerCache(kind="mla", bytes_per_token=130)]
    layout = KVLayout(layers=layers, block_size=16, kv_dtype="fp8", dtype_bytes=1.0,
                      bytes_per_token=430, sliding_bytes_per_token=0,
                      state_bytes_per_request=0, notes=[])
    cap = kv_capacity(layout, 430 * 16 * 1000, max_model_len=1600)
    assert cap.num_groups == 1 and cap.bytes_per_block == 430 * 16
    assert cap.num_blocks == 1000 and cap.kv_cache_tokens == 16_000
