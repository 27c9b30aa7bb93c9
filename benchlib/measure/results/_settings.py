"""benchlib's own settings of a run, kept in its result beside the reference's keys
(:class:`RunSettings`: lengths, dataset, warmups and what they sent, seed, percentiles, SLOs,
the prompts' digest and the keys the bodies held)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib.measure.workload._config import MeasureConfig
from benchlib.measure.workload._datasets import DatasetKind
from benchlib.measure.workload._prefix_share import PrefixShare
from benchlib.measure.workload._sampling import SentKeys
from benchlib.measure.workload._seeds import warmup_seed

__all__ = ["RunSettings", "warmup_description"]


class RunSettings(BaseModel):
    """benchlib's settings of the run that the reference's keys do not record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_len: int = Field(description="requested prompt tokens (random and text datasets)")
    output_len: int | None = Field(description="requested output tokens (null: no limit)")
    dataset: DatasetKind = Field(description="the dataset kind")
    random_range_ratio: float = Field(description="spread of the random lengths")
    range_ratio_mode: Literal["vllm", "sglang"] = Field(description="how it spreads them")
    num_warmups: int = Field(description="requests sent before the timed load")
    warmup_prompts: str = Field(
        "", description="what the warmups sent: 'distinct, seed N' (prompts no measured "
                        "request repeats) or 'the first measured prompt (like vllm bench "
                        "serve)'; '' when there were none")
    seed: int = Field(description="seed of the prompts and arrival gaps (vllm bench serve "
                                  "--seed sends the same)")
    percentiles: list[float] = Field(description="percentiles computed per metric")
    goodput: dict[str, float] = Field(description="SLOs (ms) behind request_goodput")
    base_url: str = Field(description="the server measured")
    requests_jsonl: str | None = Field(
        description="the per-request file's name, beside the result JSON (null: not written)")
    prompts_sha256: str | None = Field(
        None, description="SHA-256 of the request bodies' prompts in order: equal for two "
                          "runs that sent the same prompts (a fair A/B's first condition)")
    sent_keys: SentKeys | None = Field(
        None, description="the top-level keys the measured bodies held: sampling keys, "
                          "length keys and the rest apart (null: an older result)")
    prompt_prefix_share: PrefixShare | None = Field(
        None, description="how much of a text dataset's prompts a prefix cache could serve "
                          "from another prompt of the set (absent: token ids, or no "
                          "tokenizer)")


def warmup_description(cfg: MeasureConfig) -> str:
    """What a run's warmups sent, in words (:mod:`benchlib.measure.workload._seeds`)."""
    if cfg.num_warmups == 0:
        return ""
    if cfg.warmups_like_vllm:
        return "the first measured prompt (like vllm bench serve)"
    if cfg.dataset != "file":
        return f"distinct, seed {warmup_seed(cfg.seed)}"
    return "distinct: the file's prompts after the measured ones"
