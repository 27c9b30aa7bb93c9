"""Speculative decoding as a recipe states it: one method vocabulary across engines.

A variant says *what* it speculates with (``method``, ``k`` tokens per step, a draft model
file); each engine's adapter (:mod:`benchlib.adapters`) turns that into its own flags (vLLM's
``--speculative-config``, llama.cpp's ``-md``/``--draft-max``), so two variants that differ
only in their speculative setting differ in exactly one recipe field, and 04_compare can
name it next to every number.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

__all__ = ["METHODS", "SpecMethod", "Speculative"]

SpecMethod = Literal["off", "ngram", "draft", "eagle", "eagle3", "mtp", "suffix", "lookup",
                     "dflash"]

#: what each method means, and what it needs (checked at import against SpecMethod)
METHODS: Mapping[str, str] = MappingProxyType({
    "off": "no speculation: one token per engine step (the baseline of a speedup)",
    "ngram": "prompt lookup: drafts copied from earlier n-grams of the sequence; no model",
    "draft": "a smaller draft model with the same vocabulary proposes k tokens",
    "eagle": "an EAGLE head (draft_model) on the target's hidden states",
    "eagle3": "an EAGLE-3 head (draft_model)",
    "mtp": "the model's own multi-token-prediction layers",
    "suffix": "suffix-tree lookup over the prompt and earlier outputs (vLLM)",
    "lookup": "llama.cpp's lookup decoding (n-gram cache)",
    "dflash": "a DFlash / DFlash2 block-diffusion drafter (draft_model, architecture "
              "DFlashDraftModel; in vLLM since 0.26.0, the drafter's config picks the version)",
})
assert set(METHODS) == set(get_args(SpecMethod)), "METHODS must describe every SpecMethod"

_NEEDS_MODEL = {"draft", "eagle", "eagle3", "dflash"}


class Speculative(BaseModel):
    """How a variant speculates; ``off`` by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: SpecMethod = Field("off", description="; ".join(f"{k}: {v}"
                                                            for k, v in METHODS.items()))
    k: int | None = Field(None, ge=1, le=64, description="tokens proposed per step "
                          "(vLLM num_speculative_tokens, llama.cpp --draft-max)")
    draft_model: Path | None = Field(None, description="the draft model or head (draft, "
                                     "eagle, eagle3): a folder or a GGUF file")
    options: dict[str, JsonValue] = Field(
        default_factory=dict, description="engine-specific extras, passed as they are "
        "(vLLM: more --speculative-config keys, e.g. prompt_lookup_max; SGLang: "
        "--speculative-KEY flags, e.g. num_steps, eagle_topk; llama.cpp: --KEY flags)")

    @model_validator(mode="after")
    def _complete(self) -> Speculative:
        if self.method == "off":
            if self.k is not None or self.draft_model is not None or self.options:
                raise ValueError("method off takes no k, draft_model or options")
            return self
        if self.k is None and self.method != "lookup":
            raise ValueError(f"method {self.method} needs k (tokens proposed per step)")
        if self.method in _NEEDS_MODEL and self.draft_model is None:
            raise ValueError(f"method {self.method} needs draft_model")
        if self.method not in _NEEDS_MODEL and self.draft_model is not None:
            raise ValueError(f"method {self.method} takes no draft_model")
        return self

    @property
    def on(self) -> bool:
        return self.method != "off"

    @property
    def label(self) -> str:
        """How reports name it: ``off``, ``ngram k=4``, ``draft k=4 (tiny-q8_0.gguf)``."""
        if not self.on:
            return "off"
        text = self.method + (f" k={self.k}" if self.k is not None else "")
        return text + (f" ({self.draft_model.name})" if self.draft_model else "")
