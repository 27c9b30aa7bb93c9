"""What the scripted server does, knob by knob."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ScriptConfig"]


class ScriptConfig(BaseModel):
    """Timings and stream shape of the scripted server (GuideLLM's mock server has the same
    idea: known ttft/itl knobs). Every field is checked: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = "scripted"
    ttft_ms: float = Field(20.0, ge=0, description="request arrival → first content chunk")
    itl_ms: float = Field(5.0, ge=0, description="gap between content chunks")
    tokens_per_chunk: int = Field(1, ge=1, description="tokens carried by each content chunk")
    output_tokens: int | None = Field(
        None, ge=1, description="tokens per answer; default: the request's max_tokens"
    )
    default_max_tokens: int = Field(16, ge=1)
    role_chunk: bool = Field(True, description="chat: send a role-only chunk at once")
    reasoning_tokens: int = Field(0, ge=0, description="leading tokens sent as reasoning")
    reasoning_field: Literal["reasoning_content", "reasoning"] = "reasoning_content"
    usage: bool = Field(True, description="honour stream_options.include_usage")
