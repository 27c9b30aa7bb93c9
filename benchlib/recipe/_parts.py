"""The recipe schema's small parts: pins that must be text, the strict base model, and the
sections that stand on their own (``hardware``, ``checks``, ``compare``); the schema's main
models (model, engine, scenarios, variants, the recipe) are in :mod:`._schema`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from benchlib.recipe._fair import Difference

__all__ = ["CompareSpec", "EnvName", "FunctionalChecks", "HardwareSpec", "Pin"]


def _must_be_text(value: Any) -> Any:
    if isinstance(value, bool | int | float):
        raise ValueError(f"must be a string: quote it in YAML (it was read as the number "
                         f"{value!r}, which loses leading zeros and trailing digits)")
    return value


#: A pin (revision, commit, version): text only, never a YAML number.
Pin = Annotated[str, BeforeValidator(_must_be_text)]
#: An environment variable's name (for secrets): letters, digits, underscores.
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class _Strict(BaseModel):
    # inf (request_rate) round-trips through the JSON snapshot as "Infinity"
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="strings")


class HardwareSpec(_Strict):
    """What the run expects to find; a mismatch is flagged in the sidecar and the notebook."""

    gpu_name_pattern: str | None = Field(None, description="regex the GPU name must match")
    gpu_count: int | None = Field(None, ge=0)
    min_gpu_memory_gib: float | None = Field(None, gt=0)
    power_limit_w: float | None = Field(None, gt=0, description="the GPUs' power limit the "
                                        "source ran at: read at launch (benchlib.energy."
                                        "_power_cap), a GPU at another limit is refused")
    set_power_limit: bool = Field(False, description="set power_limit_w through NVML at "
                                  "launch (root only) and restore each GPU's limit after")
    driver_version: Pin | None = Field(None, description="NVIDIA driver the source ran, "
                                       "e.g. \"580.178.04\"")
    cuda_version: Pin | None = Field(None, description="CUDA toolkit the source built or "
                                     "ran with, e.g. \"12.8.93\" (the driver's CUDA must be "
                                     "at least this)")
    nodes: int = Field(1, ge=1, description="machines the engine spans")
    notes: str = Field("", description="what else the source says of the machine (cooling, "
                       "clocks, PCIe, firmware)")

    @model_validator(mode="after")
    def _cap(self) -> HardwareSpec:
        if self.set_power_limit and self.power_limit_w is None:
            raise ValueError("set_power_limit: no power_limit_w to set")
        return self


class FunctionalChecks(_Strict):
    """What 02_launch checks through the ``openai`` SDK before anything is measured."""

    chat: bool = Field(True, description="one streamed chat with a known answer: does the "
                       "model answer in words, through the engine's template and tokenizer")
    chat_prompt: str = Field("What is the capital of France? Answer in one sentence.",
                             min_length=1, description="the chat check's question")
    chat_expect: str | None = Field(
        "Paris", min_length=1, description="text the answer must contain (case does not "
        "matter) for the chat check to pass: random weights, or a template or tokenizer "
        "that does not match the model, answer without it; null: any text passes")
    thinking: bool = Field(False, description="thinking off and on "
                           "(chat_template_kwargs.enable_thinking): is reasoning kept apart "
                           "from the content")
    tool_call: bool = Field(False, description="a streamed tool-call round trip (seed 001's "
                            "get_weather): call, result sent back, answer")
    tool_choice: Literal["auto", "required"] = Field(
        "auto", description="auto: the model decides (needs the engine's tool-call parser); "
                            "required: the engine must call a tool")
    max_tokens: int = Field(64, ge=1, description="tokens each check may generate")


class CompareSpec(_Strict):
    """Which earlier runs to set beside this one in ``04_compare``."""

    runs: list[Path] = Field(default_factory=list, description="other run folders")
    references: list[Path] = Field(
        default_factory=list, description="published results to set beside the run: "
        "reference files (benchlib.references), e.g. params/seeds/references/003.yaml")
    differences: list[Difference] = Field(
        default_factory=list, description="settings the variants may differ in because "
        "that is the point of the comparison; any other difference is refused")
    metrics: list[str] = Field(default_factory=lambda: ["median_ttft_ms", "median_tpot_ms",
                                                        "output_throughput"])
