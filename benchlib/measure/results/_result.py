"""The run's result: typed models whose field descriptions document the result JSON.

:class:`RunMetrics` is what :func:`~benchlib.measure.summarize` computes; :class:`MeasureResult`
adds the run's header (the keys ``vllm bench serve`` 0.32 writes around its metrics, with its
meaning) and benchlib's settings block, and is what :func:`~benchlib.measure.measure` returns
and writes. Keys named like the reference's mean what it means (see
:mod:`benchlib.measure.stats._metrics`); ours are named apart. Times are milliseconds in the
``*_ms`` statistics and seconds in the per-request lists, as the reference writes them.

The percentile keys (``p{P}_{metric}_ms``, e.g. ``p99_ttft_ms``, ``p99.9_itl_ms``) depend on
the run's percentiles, so they are validated extra keys rather than fields:
:meth:`RunMetrics.percentile` reads one. :meth:`RunMetrics.to_json` gives the JSON object with
exactly the keys of the file, in its order (each percentile after its metric's ``std``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchlib.measure.load._conversations import ConversationSummary
from benchlib.measure.load._split import WorkersInfo
from benchlib.measure.results._records import requests_path
from benchlib.measure.results._settings import RunSettings, warmup_description
from benchlib.measure.stats._intervals import Intervals
from benchlib.measure.wire._request import EndpointKind
from benchlib.measure.wire._timing import Timing
from benchlib.measure.workload._config import MeasureConfig
from benchlib.measure.workload._prefix_share import PrefixShare
from benchlib.measure.workload._sampling import SentKeys

__all__ = ["METRICS", "MeasureResult", "RepeatSummary", "RunMetrics", "RunSettings",
           "TokenSources", "percentile_key"]

#: every metric with statistics, and what it measures (the statistics' descriptions)
METRICS: dict[str, str] = {
    "ttft": "vLLM's TTFT: send → first SSE event with non-empty choices (a role-only chat "
            "chunk counts)",
    "tpot": "vLLM's TPOT: (E2EL − TTFT) / (N − 1) for requests with N > 1 output tokens",
    "itl": "vLLM's ITL: gaps between consecutive events with non-empty choices (one per "
           "chunk, not per token)",
    "e2el": "vLLM's E2EL: send → last event with non-empty choices (usage event and [DONE] "
            "excluded)",
    "client_queue_time": "client queueing: release → send, waiting for a concurrency slot or "
                         "a connection (only with max_concurrency)",
    "e2el_including_client_queue": "E2EL plus client queueing (only with max_concurrency and a "
                                   "finite request_rate)",
    "ttft_from_schedule": "benchlib's TTFT counted from the instant the schedule had the "
                          "request due (not its send): the first text's arrival minus the "
                          "due time, so client queueing and a late release are included "
                          "(only with a paced load: a finite request_rate or a trace)",
    "ttft_text": "benchlib's TTFT: send → first event carrying generated text (content, "
                 "reasoning or tool-call text)",
    "tpot_text": "benchlib's TPOT: (E2EL − TTFT to text) / (N − 1)",
    "itl_text_only": "gaps between text-carrying events that were measured (two events of one "
                     "read are counted in timing.coalesced_gaps instead)",
    "itl_per_token": "each measured text gap spread over the tokens that arrived with it",
}
_STATS = {"mean": "mean", "median": "median", "std": "standard deviation (ddof 0)"}
_PERCENTILE_KEY = re.compile(r"^p(\d+(?:\.\d+)?)_(\w+)_ms$")


def percentile_key(p: float) -> str:
    """``99`` → ``p99``, ``99.9`` → ``p99.9`` (the reference's key spelling)."""
    return f"p{int(p)}" if float(p).is_integer() else f"p{p}"


def _stat(stat: str, metric: str) -> str:
    return (f"{_STATS[stat]} of {METRICS[metric]}, over successful requests, in ms; null "
            "when there is none")


class TokenSources(BaseModel):
    """Successful requests by where their output token count came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    usage: int = Field(description="counted by the server (usage.completion_tokens)")
    tokenizer: int = Field(description="counted with the tokenizer: the server sent no usage")


class RunMetrics(BaseModel):
    """The metrics of one run, ``vllm bench serve``'s keys first, then benchlib's."""

    model_config = ConfigDict(extra="allow", frozen=True)
    #: the percentile keys, p{P}_{metric}_ms
    __pydantic_extra__: dict[str, float | None] = Field(init=False)

    duration: float = Field(description="seconds from the start of the load (before the first "
                                        "arrival gap) to the end of the last request")
    completed: int = Field(description="successful requests")
    failed: int = Field(description="failed requests")
    total_input_tokens: int = Field(
        description="Σ prompt tokens of successful requests: the server's usage.prompt_tokens "
                    "where sent (as vLLM 0.32), else the dataset's count")
    total_output_tokens: int = Field(description="Σ output tokens of successful requests")
    request_throughput: float | None = Field(description="completed / duration (req/s)")
    request_goodput: float | None = Field(
        description="requests meeting every goodput SLO / duration (req/s); null without SLOs")
    output_throughput: float | None = Field(description="total_output_tokens / duration")
    total_token_throughput: float | None = Field(
        description="(total_input_tokens + total_output_tokens) / duration")
    max_output_tokens_per_s: float | None = Field(
        description="vLLM's peak: the busiest whole second's count of choices events (chunks, "
                    "not tokens)")
    max_concurrent_requests: int | None = Field(
        description="vLLM's peak: most requests touching one whole second (can exceed "
                    "max_concurrency)")
    rtfx: float = Field(description="audio seconds per second (vLLM's; 0: no audio here)")
    mean_ttft_ms: float | None = Field(description=_stat("mean", "ttft"))
    median_ttft_ms: float | None = Field(description=_stat("median", "ttft"))
    std_ttft_ms: float | None = Field(description=_stat("std", "ttft"))
    mean_tpot_ms: float | None = Field(description=_stat("mean", "tpot"))
    median_tpot_ms: float | None = Field(description=_stat("median", "tpot"))
    std_tpot_ms: float | None = Field(description=_stat("std", "tpot"))
    mean_itl_ms: float | None = Field(description=_stat("mean", "itl"))
    median_itl_ms: float | None = Field(description=_stat("median", "itl"))
    std_itl_ms: float | None = Field(description=_stat("std", "itl"))
    mean_e2el_ms: float | None = Field(description=_stat("mean", "e2el"))
    median_e2el_ms: float | None = Field(description=_stat("median", "e2el"))
    std_e2el_ms: float | None = Field(description=_stat("std", "e2el"))
    # present only with max_concurrency (and, the queue-inclusive E2EL, a finite rate)
    mean_client_queue_time_ms: float | None = Field(
        None, description=_stat("mean", "client_queue_time"))
    median_client_queue_time_ms: float | None = Field(
        None, description=_stat("median", "client_queue_time"))
    std_client_queue_time_ms: float | None = Field(
        None, description=_stat("std", "client_queue_time"))
    mean_e2el_including_client_queue_ms: float | None = Field(
        None, description=_stat("mean", "e2el_including_client_queue"))
    median_e2el_including_client_queue_ms: float | None = Field(
        None, description=_stat("median", "e2el_including_client_queue"))
    std_e2el_including_client_queue_ms: float | None = Field(
        None, description=_stat("std", "e2el_including_client_queue"))
    # present only with a paced load (a finite request_rate, a trace)
    mean_ttft_from_schedule_ms: float | None = Field(
        None, description=_stat("mean", "ttft_from_schedule"))
    median_ttft_from_schedule_ms: float | None = Field(
        None, description=_stat("median", "ttft_from_schedule"))
    std_ttft_from_schedule_ms: float | None = Field(
        None, description=_stat("std", "ttft_from_schedule"))
    mean_ttft_text_ms: float | None = Field(description=_stat("mean", "ttft_text"))
    median_ttft_text_ms: float | None = Field(description=_stat("median", "ttft_text"))
    std_ttft_text_ms: float | None = Field(description=_stat("std", "ttft_text"))
    mean_tpot_text_ms: float | None = Field(description=_stat("mean", "tpot_text"))
    median_tpot_text_ms: float | None = Field(description=_stat("median", "tpot_text"))
    std_tpot_text_ms: float | None = Field(description=_stat("std", "tpot_text"))
    mean_itl_text_only_ms: float | None = Field(description=_stat("mean", "itl_text_only"))
    median_itl_text_only_ms: float | None = Field(description=_stat("median", "itl_text_only"))
    std_itl_text_only_ms: float | None = Field(description=_stat("std", "itl_text_only"))
    mean_itl_per_token_ms: float | None = Field(description=_stat("mean", "itl_per_token"))
    median_itl_per_token_ms: float | None = Field(description=_stat("median", "itl_per_token"))
    std_itl_per_token_ms: float | None = Field(description=_stat("std", "itl_per_token"))
    peak_output_tokens_per_s: float | None = Field(
        description="the busiest whole second counted in tokens (not chunks)")
    peak_concurrent_requests: int | None = Field(
        description="true peak overlap of in-flight successful requests")
    total_input_tokens_server: int | None = Field(
        description="Σ the server's usage.prompt_tokens (null: it sent none)")
    total_input_tokens_dataset: int = Field(description="Σ the dataset's prompt lengths")
    duration_first_send_ms: float | None = Field(
        description="first request sent → last request ended on the wire")
    mean_tokens_per_chunk: float | None = Field(
        description="output tokens / text chunks: ≈ acceptance length under MTP / speculative "
                    "decoding")
    max_itl_ms: float | None = Field(
        None, description="the longest of vLLM's ITLs (gaps between choices events): the "
                          "worst stall a reader saw")
    mean_request_decode_rate: float | None = Field(
        None, description="each request's own decode rate, tokens/s (1000 / its TPOT), then "
                          "the mean: how seed 003's write-up states speed, beside "
                          "per_user_tok_s (1000 / the median TPOT)")
    median_text_chunks_per_s: float | None = Field(
        None, description="per request, text-carrying chunks after the first per second "
                          "after the first text, then the median: what a script counting "
                          "each streamed chunk as a token prints as tokens/sec (seed 000's "
                          "85.77); under speculative decoding a chunk carries several tokens, "
                          "so this is not per_user_tok_s")
    mean_text_chunks_per_s: float | None = Field(
        None, description="the mean of the same per-request chunk rates")
    buffered_streams: int = Field(
        description="streams whose chunks (3 or more) all arrived within 1 ms: their TPOT is "
                    "not decode speed")
    text_free_requests: int = Field(
        0, description="successful requests whose tokens (the server's count) came without "
        "text: ids the tokenizer cannot render (dummy weights with a smaller tokenizer); timed "
        "by their events with choices, vLLM's way")
    output_tokens_source: TokenSources = Field(
        description="successful requests by where their output count came from")
    synthetic: bool = Field(
        False, description="true when benchlib's scripted server answered (it says so in an "
                           "x-benchlib-synthetic header): canned timings that test the kit, "
                           "not an engine's figures")
    timing: Timing = Field(description="how far these times can be trusted")
    input_lens: list[int] = Field(description="per request, as total_input_tokens counts it")
    output_lens: list[int] = Field(description="per request: output tokens (0 when failed)")
    ttfts: list[float] = Field(description="per request: vLLM's TTFT in s (0.0: none)")
    itls: list[list[float]] = Field(description="per request: vLLM's ITLs in s")
    latencies: list[float] = Field(description="per request: E2EL in s (0.0 when failed)")
    start_times: list[float] = Field(description="per request: send, perf_counter s")
    queue_times: list[float] = Field(description="per request: release → send in s")
    generated_texts: list[str] = Field(description="per request: the generated content")
    errors: list[str] = Field(description='per request: why it failed ("" on success)')

    @model_validator(mode="after")
    def _percentile_keys(self) -> RunMetrics:
        for key in self.model_extra or {}:
            match = _PERCENTILE_KEY.match(key)
            if match is None or match.group(2) not in METRICS:
                raise ValueError(f"unknown key {key!r}: not a p{{P}}_{{metric}}_ms percentile")
        return self

    def percentile(self, metric: str, p: float) -> float | None:
        """The ``p``-th percentile of ``metric`` (a key of :data:`METRICS`), e.g.
        ``percentile("ttft", 99)`` is ``p99_ttft_ms``; ``KeyError`` if it was not computed."""
        value: float | None = (self.model_extra or {})[f"{percentile_key(p)}_{metric}_ms"]
        return value

    def _ordered(self, names: Iterable[str]) -> dict[str, Any]:
        """The fields ``names`` that are set, in that order, each ``std_*`` followed by its
        metric's percentile keys (the order ``vllm bench serve`` writes)."""
        dumped = self.model_dump(exclude_unset=True)
        percentiles: dict[str, list[str]] = {}
        for key in self.model_extra or {}:
            match = _PERCENTILE_KEY.match(key)
            assert match is not None  # checked on validation
            percentiles.setdefault(match.group(2), []).append(key)
        out: dict[str, Any] = {}
        for name in names:
            if name in dumped:
                out[name] = dumped[name]
            if name.startswith("std_") and name.endswith("_ms"):
                for key in percentiles.get(name[4:-3], ()):
                    out[key] = dumped[key]
        return out

    def to_json(self) -> dict[str, Any]:
        """The metrics as the result JSON has them: keys, order and values."""
        return self._ordered(RunMetrics.model_fields)


class RepeatSummary(BaseModel):
    """One repeat of a measurement: its seed, its files and its headline figures (the whole
    result is in its own JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repeat: int = Field(description="0-based; repeat 0's figures are the result's own keys")
    seed: int = Field(description="seed of its prompts "
                           "(benchlib.measure.workload._seeds.repeat_seed)")
    result_json: str | None = Field(description="its result JSON's name, beside this one "
                                                "(null: not written)")
    completed: int = Field(description="successful requests")
    failed: int = Field(description="failed requests")
    duration: float = Field(description="seconds, as the result's duration")
    median_ttft_ms: float | None = Field(description="vLLM's median TTFT")
    median_tpot_ms: float | None = Field(description="vLLM's median TPOT")
    median_itl_ms: float | None = Field(description="vLLM's median ITL")
    output_throughput: float | None = Field(description="output tokens per second")

    @classmethod
    def of(cls, r: int, result: MeasureResult) -> RepeatSummary:
        json_name = result.benchlib.requests_jsonl
        return cls(repeat=r, seed=result.benchlib.seed,
                   result_json=(json_name.removesuffix(".requests.jsonl") + ".json"
                                if json_name else None),
                   completed=result.completed, failed=result.failed, duration=result.duration,
                   median_ttft_ms=result.median_ttft_ms, median_tpot_ms=result.median_tpot_ms,
                   median_itl_ms=result.median_itl_ms,
                   output_throughput=result.output_throughput)


#: the result's last keys, after the metrics (``workers`` only when the load was split;
#: ``repeats`` and ``intervals`` only in a measurement's first repeat's file)
_TAIL = ("clock", "benchlib", "workers", "repeats", "intervals", "conversations")
#: ``inf`` as the reference writes an unlimited rate or burstiness
Unlimited = float | Literal["inf"]


class MeasureResult(RunMetrics):
    """One run's result: the reference's header keys, the metrics, benchlib's settings."""

    date: str = Field(description="when the run started, UTC, YYYYMMDD-HHMMSS")
    backend: str = Field(description='the client that measured: "benchlib"')
    endpoint_type: EndpointKind = Field(description="the API streamed from")
    label: str | None = Field(description="vLLM's run label (benchlib sets none)")
    model_id: str = Field(description="the model name requested")
    tokenizer_id: str | None = Field(description="the tokenizer folder (null: none)")
    num_prompts: int = Field(description="requests in the timed load")
    request_rate: Unlimited = Field(description='requests released per second ("inf": all)')
    burstiness: Unlimited = Field(description='gamma shape of the release gaps ("inf": fixed)')
    max_concurrency: int | None = Field(description="concurrency limit (null: none)")
    clock: Literal["kernel", "userspace", "mixed", "none"] = Field(
        description="timing.clock, repeated at the top level")
    benchlib: RunSettings = Field(description="benchlib's settings of this run")
    workers: WorkersInfo | None = Field(
        None, description="how the load was split among client processes or hosts, and each "
                          "worker's own timing self-check (absent: one process sent it)")
    repeats: list[RepeatSummary] | None = Field(
        None, description="every repeat of the measurement, this one first (its keys above "
                          "are repeat 0's alone)")
    conversations: ConversationSummary | None = Field(
        None, description="the conversations dataset: per-turn TTFT and the prefix cache's "
                          "hit rate (benchlib.measure.load._conversations)")
    intervals: Intervals | None = Field(
        None, description="the headline figures over every repeat's requests, each with its "
                          "bootstrap 95 % interval (benchlib.measure.stats._intervals)")

    @classmethod
    def assemble(cls, cfg: MeasureConfig, metrics: RunMetrics, date: str,
                 prompts_sha256: str | None = None,
                 workers: WorkersInfo | None = None,
                 sent: SentKeys | None = None,
                 prefix: PrefixShare | None = None) -> MeasureResult:
        """The result of the run ``cfg`` describes, whose metrics are ``metrics``."""
        def unlimited(x: float) -> Unlimited:
            return "inf" if math.isinf(x) else x

        settings = RunSettings(
            input_len=cfg.input_len, output_len=cfg.output_len, dataset=cfg.dataset,
            random_range_ratio=cfg.random_range_ratio, range_ratio_mode=cfg.range_ratio_mode,
            num_warmups=cfg.num_warmups, warmup_prompts=warmup_description(cfg),
            seed=cfg.seed, percentiles=list(cfg.percentiles),
            goodput=dict(cfg.goodput), base_url=cfg.base_url,
            # beside the result JSON: the folder can be moved
            requests_jsonl=(requests_path(cfg.result_json).name
                            if cfg.result_json is not None else None),
            prompts_sha256=prompts_sha256, sent_keys=sent,
            **({"prompt_prefix_share": prefix} if prefix is not None else {}))
        header = {
            "date": date, "backend": "benchlib", "endpoint_type": cfg.endpoint, "label": None,
            "model_id": cfg.model,
            "tokenizer_id": str(cfg.tokenizer) if cfg.tokenizer else None,
            "num_prompts": cfg.num_prompts, "request_rate": unlimited(cfg.request_rate),
            "burstiness": unlimited(cfg.burstiness), "max_concurrency": cfg.max_concurrency,
        }
        split = {"workers": workers} if workers is not None else {}
        return cls.model_validate({**header, **metrics.to_json(),
                                   "clock": metrics.timing.clock, "benchlib": settings, **split})

    def to_json(self) -> dict[str, Any]:
        """The result JSON's object: every key ``vllm bench serve`` 0.32 writes, with its
        meaning, then benchlib's, in the file's order; the percentile keys included."""
        head = [n for n in MeasureResult.model_fields
                if n not in RunMetrics.model_fields and n not in _TAIL]
        return self._ordered([*head, *RunMetrics.model_fields, *_TAIL])
