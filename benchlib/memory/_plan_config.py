"""A plan's inputs (:class:`PlanConfig`): ``benchlib plan``'s flags, a recipe's ``plan``
keys, and what an engine's own flags set for 02_launch's comparison — checked as a whole."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from benchlib.memory._kv import KV_CACHE_DTYPES
from benchlib.memory._overhead import default_utilization
from benchlib.memory._weights import WEIGHT_DTYPES

__all__ = ["PlanConfig"]

_VERSION_RE = re.compile(r"^\d+\.\d+")


class PlanConfig(BaseModel):
    """Inputs of a plan. Field names are ``benchlib plan``'s flags (``-`` → ``_``), so a recipe
    can hold the same keys; ``model`` is ``--model-config``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: Path
    gpu: str | None = None
    gpu_memory_gib: float | None = Field(None, gt=0)
    gpu_bandwidth_gbs: float | None = Field(None, gt=0)
    num_gpus: int | None = Field(None, ge=1)
    tp: int | None = Field(None, ge=1)
    gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="default: the vLLM version's own (0.92 since 0.21)")
    weight_dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = Field(None, ge=1)
    kv_budget_gib: float | None = None
    max_num_batched_tokens: int | None = Field(None, ge=1)
    max_num_seqs: int | None = Field(None, ge=1)
    block_size: int = Field(16, ge=1)
    vllm_version: str = "0.32"
    decode_batch: int = Field(32, ge=1)
    decode_context: int | None = Field(None, ge=1)
    sglang_pool: bool = Field(
        False, description="also predict what SGLang will report (max_total_num_tokens); its "
        "adapter sets it for an SGLang recipe")
    mem_fraction_static: float | None = Field(
        None, gt=0, le=1, description="SGLang's --mem-fraction-static (default: SGLang's own)")
    speculative: str | None = Field(
        None, description="the speculative method the engine runs (draft, ngram, eagle, "
        "mtp …): vLLM then profiles its rejection sampler")
    draft_model: Path | None = Field(
        None, description="a draft model's folder (config.json): its weights and KV layers "
        "count on every GPU beside the target's")
    cuda_graphs: bool = Field(
        True, description="False under --enforce-eager: no graphs captured, so vLLM takes no "
        "CUDA-graph estimate off the KV budget")
    num_speculative_tokens: int | None = Field(
        None, ge=1, description="k of --speculative-config: a hybrid's recurrent layers keep "
        "k more convolution positions and k more state blocks per request")
    language_model_only: bool = Field(
        False, description="vLLM's --language-model-only: a multimodal checkpoint's vision "
        "and audio towers are not built, so not loaded")
    quantization: str | None = Field(
        None, description="vLLM's --quantization: must match the checkpoint's method; on an "
        "unquantized checkpoint fp8 (or bitsandbytes) quantizes at load")

    @field_validator("speculative")
    @classmethod
    def _off_is_none(cls, value: str | None) -> str | None:
        """The recipe's ``off`` (the kit's method for no speculation) is no method: neither
        vLLM's rejection sampler nor SGLang's draft reserve is counted for it."""
        return None if value is not None and value.lower() == "off" else value

    @property
    def utilization(self) -> float:
        """The utilization in force: the one given, else this vLLM version's default."""
        return self.gpu_memory_utilization or default_utilization(self.vllm_version)

    @model_validator(mode="after")
    def _check(self) -> PlanConfig:
        if self.gpu is not None and self.gpu_memory_gib is not None:
            raise ValueError("give --gpu or --gpu-memory-gib, not both")
        if self.weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(f"--weight-dtype {self.weight_dtype!r}: use one of "
                             + ", ".join(WEIGHT_DTYPES))
        if self.kv_cache_dtype not in KV_CACHE_DTYPES:
            raise ValueError(f"--kv-cache-dtype {self.kv_cache_dtype!r}: use one of "
                             + ", ".join(KV_CACHE_DTYPES))
        if self.num_gpus and self.tp and self.num_gpus % self.tp:
            raise ValueError(f"--num-gpus {self.num_gpus} is not a multiple of --tp {self.tp}")
        if not _VERSION_RE.match(self.vllm_version.lstrip("v")):
            raise ValueError(f"--vllm-version {self.vllm_version!r}: expected like 0.32 or 0.10.1")
        return self
