"""The config corpus: real ``config.json`` files with their published parameter counts.

Each case folder holds the model's ``config.json`` (verbatim from a public mirror) and a
``case.yaml`` naming where the config and the count came from, the count as published
(``total``, ``active`` for MoE) with the quoted sentence, and what that count ``includes``
beyond the text decoder (``vision_tower``, ``mtp_layers``). The plan counts the same scope:
towers are left out of its total when the published one leaves them out, MTP layers (counted
apart by the plan) are added when it includes them. A case outside the tolerances (2 % total,
5 % active) must say why in ``explains``; the tests hold every case to that and
``benchmarks/params_vs_published.py`` prints the whole table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from benchlib.memory._cases import pct_error
from benchlib.memory._load import load_model_config
from benchlib.memory._params import count_params

__all__ = [
    "ACTIVE_TOLERANCE_PCT",
    "TOTAL_TOLERANCE_PCT",
    "CorpusCase",
    "CorpusResult",
    "check_corpus_case",
    "load_corpus",
]

TOTAL_TOLERANCE_PCT = 2.0
ACTIVE_TOLERANCE_PCT = 5.0


class Published(BaseModel):
    """A parameter count as its source states it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    total: float = Field(gt=0, description="total parameters as published")
    active: float | None = Field(None, gt=0, description="parameters active per token (MoE)")
    source: str = Field(description="the page, paper or index that states the count")
    quote: str = Field(description="the count's sentence, as written there")
    includes: list[str] = Field(default_factory=list, description="beyond the text decoder: "
                                "vision_tower, audio_tower, mtp_layers")
    active_counts_embedding: bool = Field(
        True, description="the active count includes the input embedding table (most do: "
        "Mixtral's 12.9 B, Qwen's; OpenAI's gpt-oss figures leave it out)")


class CorpusCase(BaseModel):
    """One model of the corpus."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    folder: Path
    model: str = Field(description="the hub id")
    model_type: str
    config: str = Field("config.json", description="the config file, relative to the case "
                        "folder (another test case's real config is shared, not copied)")
    config_source: str = Field(description="where the config.json was read")
    published: Published
    note: str = ""
    explains: str = Field("", description="why the plan's count may differ beyond tolerance")


class CorpusResult(BaseModel):
    """The plan's counts in the published scope, with signed percentage errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model_type: str
    layers: str = Field(description="mixers and feed-forwards, e.g. '36 full · 36 moe'")
    defaults_from: str
    total: int
    total_published: float
    total_err_pct: float
    active: int | None
    active_published: float | None
    active_err_pct: float | None
    within: bool = Field(description="both errors inside the tolerances")
    explains: str


def load_corpus(folder: Path) -> list[CorpusCase]:
    """Every ``*/case.yaml`` under ``folder``, sorted by name."""
    cases = []
    for path in sorted(folder.glob("*/case.yaml")):
        raw: dict[str, Any] = yaml.safe_load(path.read_text())
        cases.append(CorpusCase(name=path.parent.name, folder=path.parent, **raw))
    return cases


def _summary(kinds: tuple[str, ...]) -> str:
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    return " ".join(f"{n} {k}" for k, n in counts.items())


def check_corpus_case(case: CorpusCase) -> CorpusResult:
    """Count ``case``'s parameters from its config alone and compare in the published scope."""
    arch = load_model_config(case.folder / case.config)
    params = count_params(arch)
    inc = set(case.published.includes)
    towers = params.by_role.get("towers", 0)
    total = params.total - (0 if inc & {"vision_tower", "audio_tower"} else towers)
    total += params.mtp if "mtp_layers" in inc else 0
    # published "active" counts keep the embedding table (Mixtral's 12.9 B, Qwen's 3.3 B); the
    # plan's ``active`` is what decode reads, which leaves it out
    embed = 0 if arch.tie_embeddings or not case.published.active_counts_embedding \
        else params.by_role["embed"]
    active = params.active + embed if arch.moe is not None else None
    t_err = pct_error(total, case.published.total)
    pub_active = case.published.active
    a_err = pct_error(active, pub_active) if active is not None and pub_active else None
    within = abs(t_err) <= TOTAL_TOLERANCE_PCT and (
        a_err is None or abs(a_err) <= ACTIVE_TOLERANCE_PCT)
    layers = _summary(arch.layer_kinds) + " · " + _summary(
        tuple(arch.ffn(i) for i in range(arch.num_layers)))
    return CorpusResult(
        name=case.name, model_type=arch.model_type, layers=layers,
        defaults_from=arch.defaults_from, total=total, total_published=case.published.total,
        total_err_pct=t_err, active=active, active_published=pub_active, active_err_pct=a_err,
        within=within, explains=case.explains)
