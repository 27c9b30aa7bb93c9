"""The imported result: another tool's published numbers under ``vllm bench serve``'s keys.

Field names are those of :class:`~benchlib.measure.MeasureResult` (which are the reference's
result JSON keys), so an imported row and a measured one go into one pandas frame. A field
holds the source tool's own statistic of that name (its TTFT, its mean, its percentile
method): where a tool defines a metric differently from vLLM, its importer's docstring says
so, and where the difference is more than a detail (a token-weighted mean, a per-chunk TPOT,
a sample standard deviation) the number goes to :attr:`ImportedResult.extra` under the tool's
own name instead. What the source does not carry is ``None``: nothing is filled in.

Units are vLLM's: ``*_ms`` statistics in milliseconds, ``duration`` in seconds, rates per
second. Percentiles are extra keys ``p{P}_{metric}_ms`` (``p99_ttft_ms``, ``p99.9_itl_ms``),
validated like :class:`~benchlib.measure.RunMetrics`' and read with
:meth:`ImportedResult.percentile`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchlib.importers._common import clean, percentile_key

__all__ = ["STAT_METRICS", "ImportedResult", "SourceFormat"]

SourceFormat = Literal["vllm-console", "vllm-json", "benchlib-json", "sglang-console",
                       "sglang-jsonl", "guidellm-json", "aiperf-json", "seed000-console"]
#: ``inf`` as vLLM writes an unlimited rate or burstiness
Unlimited = float | Literal["inf"]

#: the metrics with statistics, vLLM's names → what they are
STAT_METRICS: dict[str, str] = {
    "ttft": "time to first token",
    "tpot": "time per output token after the first, per request: (E2EL − TTFT) / (N − 1)",
    "itl": "inter-token latency: gaps between streamed chunks",
    "e2el": "end-to-end latency of a request",
    "client_queue_time": "client queueing before the request was sent (vLLM)",
    "e2el_including_client_queue": "E2EL plus client queueing (vLLM)",
}
_PERCENTILE_KEY = re.compile(r"^p(\d+(?:\.\d+)?)_(\w+)_ms$")
_STATS = {"mean": "mean", "median": "median", "std": "standard deviation (population)"}


def _stat(stat: str, metric: str) -> str:
    return f"{_STATS[stat]} of {STAT_METRICS[metric]}, in ms, as the source reports it"


def _opt(description: str) -> Any:
    return Field(None, description=description)


class ImportedResult(BaseModel):
    """One benchmark result read from a file, with vLLM's keys and the source named."""

    model_config = ConfigDict(extra="allow", frozen=True)
    #: the percentile keys, p{P}_{metric}_ms
    __pydantic_extra__: dict[str, float | None] = Field(init=False)

    source_format: SourceFormat = Field(description="the format the result was read from")
    source_version: str | None = _opt("the tool's version where the file states it")
    source_file: str = Field(description="the file read")
    source_index: int = Field(description="position of this result in the file, from 0")
    # the reference's header keys
    date: str | None = _opt("when the run started, as the source writes it")
    backend: str | None = _opt("the backend the tool was told to drive")
    endpoint_type: str | None = _opt("the API streamed from (vLLM)")
    label: str | None = _opt("the run label (vLLM)")
    model_id: str | None = _opt("the model requested")
    tokenizer_id: str | None = _opt("the tokenizer (vLLM)")
    num_prompts: int | None = _opt("requests in the timed load")
    request_rate: Unlimited | None = _opt('requests released per second ("inf": all at once)')
    burstiness: Unlimited | None = _opt("gamma shape of the release gaps (vLLM)")
    max_concurrency: int | None = _opt("concurrency limit")
    # the reference's metric keys
    duration: float | None = _opt("seconds the timed load took")
    completed: int | None = _opt("successful requests")
    failed: int | None = _opt("failed requests")
    total_input_tokens: int | None = _opt("Σ prompt tokens of successful requests")
    total_output_tokens: int | None = _opt("Σ output tokens of successful requests")
    request_throughput: float | None = _opt("successful requests per second")
    request_goodput: float | None = _opt("requests meeting every SLO per second")
    output_throughput: float | None = _opt("output tokens per second")
    total_token_throughput: float | None = _opt("prompt + output tokens per second")
    max_output_tokens_per_s: float | None = _opt("peak output tokens (vLLM: chunks) in one second")
    max_concurrent_requests: int | None = _opt("peak concurrent requests")
    rtfx: float | None = _opt("audio seconds per second (vLLM)")
    mean_ttft_ms: float | None = _opt(_stat("mean", "ttft"))
    median_ttft_ms: float | None = _opt(_stat("median", "ttft"))
    std_ttft_ms: float | None = _opt(_stat("std", "ttft"))
    mean_tpot_ms: float | None = _opt(_stat("mean", "tpot"))
    median_tpot_ms: float | None = _opt(_stat("median", "tpot"))
    std_tpot_ms: float | None = _opt(_stat("std", "tpot"))
    mean_itl_ms: float | None = _opt(_stat("mean", "itl"))
    median_itl_ms: float | None = _opt(_stat("median", "itl"))
    std_itl_ms: float | None = _opt(_stat("std", "itl"))
    mean_e2el_ms: float | None = _opt(_stat("mean", "e2el"))
    median_e2el_ms: float | None = _opt(_stat("median", "e2el"))
    std_e2el_ms: float | None = _opt(_stat("std", "e2el"))
    mean_client_queue_time_ms: float | None = _opt(_stat("mean", "client_queue_time"))
    median_client_queue_time_ms: float | None = _opt(_stat("median", "client_queue_time"))
    std_client_queue_time_ms: float | None = _opt(_stat("std", "client_queue_time"))
    mean_e2el_including_client_queue_ms: float | None = _opt(
        _stat("mean", "e2el_including_client_queue"))
    median_e2el_including_client_queue_ms: float | None = _opt(
        _stat("median", "e2el_including_client_queue"))
    std_e2el_including_client_queue_ms: float | None = _opt(
        _stat("std", "e2el_including_client_queue"))
    extra: dict[str, Any] = Field(
        default_factory=dict,
        description="what only this tool reports (or reports with another meaning), under "
                    "the tool's own names and units")

    @model_validator(mode="after")
    def _percentile_keys(self) -> ImportedResult:
        for key in self.model_extra or {}:
            match = _PERCENTILE_KEY.match(key)
            if match is None or match.group(2) not in STAT_METRICS:
                raise ValueError(f"unknown key {key!r}: not a p{{P}}_{{metric}}_ms percentile")
        return self

    def percentile(self, metric: str, p: float | str) -> float | None:
        """The ``p``-th percentile of ``metric`` (a key of :data:`STAT_METRICS`), e.g.
        ``percentile("ttft", 99)`` is ``p99_ttft_ms``; ``None`` if the source did not give it."""
        value: float | None = (self.model_extra or {}).get(f"{percentile_key(p)}_{metric}_ms")
        return value

    def percentiles(self, metric: str) -> dict[str, float | None]:
        """Every percentile of ``metric`` the source gave, ``{"p99": 12.3, …}``, in order."""
        keys = [(m.group(1), k) for k in self.model_extra or {}
                if (m := _PERCENTILE_KEY.match(k)) and m.group(2) == metric]
        keys.sort(key=lambda pk: float(pk[0]))
        return {f"p{p}": (self.model_extra or {})[k] for p, k in keys}

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON object: every field (``null`` where the source is silent), each
        metric's percentiles after its ``std``, ``extra`` last; non-finite numbers as text."""
        out: dict[str, Any] = {}
        for name in ImportedResult.model_fields:  # extra is the last field
            out[name] = getattr(self, name)
            if name.startswith("std_"):  # std_{metric}_ms
                for p, v in self.percentiles(name[4:-3]).items():
                    out[f"{p}_{name[4:-3]}_ms"] = v
        cleaned: dict[str, Any] = clean(out)
        return cleaned
