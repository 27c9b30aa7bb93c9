"""The plan reads quantized and multimodal checkpoints the way vLLM 0.26.0 does, on real config
files from public repositories (tests/data/configs/quantized/*/case.yaml names each source):
ModelOpt's hf_quant_config.json beside config.json (FP8 and NVFP4, with the FP8 KV cache
``--kv-cache-dtype auto`` then follows), compressed-tensors FP8, and a multimodal checkpoint
served with ``--language-model-only``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlib._exceptions import UsageError
from benchlib.memory import PlanConfig, plan

DATA = Path(__file__).parents[2] / "data" / "configs"
Q = DATA / "quantized"


def _index_total(folder: Path) -> int:
    return int(json.loads((folder / "model.safetensors.index.json").read_text())
               ["metadata"]["total_size"])


def test_modelopt_nvfp4_folder_gets_the_checkpoints_bytes_and_fp8_kv() -> None:
    folder = Q / "nvidia--llama-3.1-8b-instruct-fp4"
    p = plan(PlanConfig(model=folder, gpu="H200", vllm_version="0.26.0", max_model_len=8192))
    assert p.weights.scheme == "nvfp4 (ModelOpt from hf_quant_config.json, group 16)"
    assert abs(p.weights.total_bytes / _index_total(folder) - 1) < 0.005
    assert "lm_head" in p.weights.high_precision
    # 32 layers × K and V × 8 heads × 128 × 1 byte: vLLM's fp8_e4m3 from kv_cache_quant_algo
    assert p.summary()["kv_cache_dtype"] == "fp8"
    assert p.layout.bytes_per_token == 32 * 2 * 8 * 128
    explicit = plan(PlanConfig(model=folder, gpu="H200", vllm_version="0.26.0",
                               max_model_len=8192, kv_cache_dtype="bf16"))
    assert explicit.layout.bytes_per_token == 2 * p.layout.bytes_per_token


def test_modelopt_fp8_70b_fits_one_h200_instead_of_oom() -> None:
    folder = Q / "nvidia--llama-3.1-70b-instruct-fp8"
    p = plan(PlanConfig(model=folder, gpu="H200", vllm_version="0.26.0", max_model_len=8192))
    assert p.weights.scheme == "fp8 (ModelOpt from hf_quant_config.json, per-tensor scales)"
    # 70.6 B params: 68.4 B of linears at 1 byte (63.7 GiB), embeddings and lm_head
    # (2 × 1.05 B) at 2 bytes (3.9 GiB); read as BF16 it would be 131 GiB
    assert 67.0 < p.weights.per_gpu_gib < 68.5
    assert p.fits and p.summary()["kv_cache_dtype"] == "fp8"
    assert p.kv_budget_gib is not None and p.kv_budget_gib > 55


def test_compressed_tensors_fp8_matches_its_index_and_keeps_bf16_kv() -> None:
    folder = Q / "neuralmagic--meta-llama-3.1-8b-instruct-fp8"
    p = plan(PlanConfig(model=folder, gpu="H200", vllm_version="0.26.0", max_model_len=8192))
    assert abs(p.weights.total_bytes / _index_total(folder) - 1) < 0.005
    assert p.summary()["kv_cache_dtype"] == "auto"
    assert p.layout.bytes_per_token == 32 * 2 * 8 * 128 * 2


@pytest.mark.parametrize("model", ["corpus/qwen--qwen2.5-vl-7b-instruct",
                                   "../../../params/models/qwen--qwen3.5-27b"])
def test_language_model_only_loads_no_tower(model: str) -> None:
    folder = DATA / model
    full = plan(PlanConfig(model=folder, gpu="H200", vllm_version="0.26.0",
                           max_model_len=4096))
    text = plan(PlanConfig(model=folder, gpu="H200", vllm_version="0.26.0",
                           max_model_len=4096, language_model_only=True))
    towers = full.weights.bytes_by_role["towers"]
    assert towers > 0 and text.weights.bytes_by_role["towers"] == 0
    assert full.weights.total_bytes - text.weights.total_bytes == towers
    assert any("--language-model-only" in n for n in text.summary()["notes"])
    assert not any("towers counted" in w for w in text.warnings)


def test_quantization_flag_must_match_the_checkpoint() -> None:
    folder = Q / "nvidia--llama-3.1-8b-instruct-fp4"
    with pytest.raises(UsageError, match="--quantization"):
        plan(PlanConfig(model=folder, gpu="H200", quantization="awq"))
    ok = plan(PlanConfig(model=folder, gpu="H200", quantization="modelopt_fp4"))
    assert ok.weights.scheme.startswith("nvfp4")


def test_online_fp8_on_a_bf16_checkpoint() -> None:
    folder = DATA / "corpus" / "meta-llama--llama-3.1-8b-instruct"
    bf16 = plan(PlanConfig(model=folder, gpu="H200"))
    fp8 = plan(PlanConfig(model=folder, gpu="H200", quantization="fp8"))
    assert fp8.weights.scheme == "fp8"
    assert fp8.weights.total_bytes < 0.6 * bf16.weights.total_bytes
    with pytest.raises(UsageError, match="--quantization"):
        plan(PlanConfig(model=folder, gpu="H200", quantization="modelopt"))


def test_fp8_block_weights_warn_of_the_deepgemm_warmup() -> None:
    folder = DATA / "corpus" / "deepseek-ai--deepseek-v3"
    p = plan(PlanConfig(model=folder, gpu="H200", num_gpus=8, vllm_version="0.26.0",
                        max_model_len=4096))
    assert "block" in p.weights.scheme
    assert any("DeepGEMM" in w and "ready_timeout_s" in w for w in p.warnings)
    dense = plan(PlanConfig(model=Q / "neuralmagic--meta-llama-3.1-8b-instruct-fp8",
                            gpu="H200"))
    assert not any("DeepGEMM" in w for w in dense.warnings)
