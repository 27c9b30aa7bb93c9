"""The measure run's settings: one validated object behind the CLI, recipes and notebooks."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["MeasureConfig"]


class MeasureConfig(BaseModel):
    """Everything ``benchlib measure`` needs. Field names are the CLI flags' (``-`` → ``_``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str
    model: str
    endpoint: Literal["completions", "chat"] = "completions"
    dataset: Literal["random", "file"] = "random"
    dataset_path: Path | None = None
    input_len: int = Field(1024, ge=1)
    output_len: int | None = Field(128, ge=1)
    random_range_ratio: float = Field(0.0, ge=0.0)
    range_ratio_mode: Literal["vllm", "sglang"] = "vllm"
    num_prompts: int = Field(100, ge=1)
    max_concurrency: int | None = Field(None, ge=1)
    request_rate: float = Field(math.inf, gt=0)
    burstiness: float = Field(1.0, gt=0)
    num_warmups: int = Field(0, ge=0)
    request_timeout: float = Field(600.0, gt=0)
    ignore_eos: bool = True
    tokenizer: Path | None = None
    seed: int = 0
    percentiles: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0)
    goodput: dict[str, float] = Field(default_factory=dict)
    result_json: Path | None = None
    disable_tqdm: bool = False
    sampling: dict[str, Any] = Field(default_factory=dict,
                                     description="extra body fields: temperature, top_p, …")

    @model_validator(mode="after")
    def _ratio(self) -> MeasureConfig:
        if self.range_ratio_mode == "vllm" and self.random_range_ratio >= 1:
            raise ValueError("--random-range-ratio must be in [0, 1) in vllm mode")
        if self.random_range_ratio > 1:
            raise ValueError("--random-range-ratio must be in [0, 1]")
        return self

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith("http://"):
            raise ValueError("must start with http:// (for example http://127.0.0.1:8000)")
        return value.rstrip("/")

    @field_validator("percentiles")
    @classmethod
    def _pct(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        for p in value:
            if not 0 < p <= 100:
                raise ValueError(f"{p} is not a percentile in (0, 100]")
        return value

    @field_validator("goodput")
    @classmethod
    def _slo(cls, value: dict[str, float]) -> dict[str, float]:
        for key, ms in value.items():
            if key not in ("ttft", "tpot", "e2el"):
                raise ValueError(f"unknown SLO {key!r}: use ttft, tpot or e2el")
            if ms <= 0:
                raise ValueError(f"{key} SLO must be > 0 ms, got {ms}")
        return value

    @model_validator(mode="after")
    def _dataset_needs(self) -> MeasureConfig:
        if self.dataset == "random" and self.tokenizer is None:
            raise ValueError("--tokenizer is required for the random dataset")
        if self.dataset == "random" and self.output_len is None:
            raise ValueError("--output-len is required for the random dataset")
        if self.dataset == "file" and self.dataset_path is None:
            raise ValueError("--dataset-path is required for the file dataset")
        return self
