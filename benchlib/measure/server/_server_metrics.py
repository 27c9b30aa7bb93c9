"""The engine's own view of a scenario: one vocabulary of server metrics, where each engine
exposes them in its Prometheus ``/metrics``, and the typed summary of a scenario's scrapes.

Engines name the same thing differently (vLLM's ``vllm:generation_tokens_total`` is
llama.cpp's ``llamacpp:tokens_predicted_total``), so results speak one vocabulary,
:data:`SERVER_METRICS`, and each engine's :class:`MetricNames` (held by its adapter,
:mod:`benchlib.adapters`) says which samples carry each word. The vocabulary is checked
against the result models at import, like the scripted server's fault table, and each
engine's names against the vocabulary when made. Where the names come from:

* vLLM 0.32: ``vllm/v1/metrics/loggers.py`` (``PrometheusStatLogger``) and
  ``vllm/v1/spec_decode/metrics.py`` (``SpecDecodingProm``), read in the installed build;
  one label set per engine (data parallel), summed;
* llama.cpp's ``llama-server --metrics`` (``tools/server``: sources read, and a real scrape
  of build 11312 with a draft model, ``tests/data/metrics/llamacpp-b11312-draft.txt``):
  ``prompt_tokens_total`` (newer builds exclude cached tokens, counted in
  ``prompt_tokens_cached_total``), ``tokens_predicted_total``, ``n_decode_total`` (newer:
  speculative decodes excluded), ``requests_processing``, ``requests_deferred``,
  ``n_busy_slots_per_decode`` (typed *counter* in 2025 builds though it is a mean; a gauge
  in newer ones) and, newer builds only, ``spec_decode_num_{drafts,draft_tokens,
  accepted_tokens}_total`` plus a per-position counter printed once a draft was verified
  (they move when a request ends, not per step). ``kv_cache_usage_ratio`` and
  ``kv_cache_tokens`` exist only in 2024 builds;
* SGLang (``python/sglang/srt/metrics/collector.py``, read in its repository but never run
  here: ``verified`` is false).

A counter is reported as its increase over the scenario, a gauge as its peak and mean while
sampled; a metric the server does not expose is ``None``, never 0. How the scrapes are taken
and summarized: :mod:`benchlib.measure.server._sampler`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SERVER_METRICS", "GaugeStats", "MetricNames", "MetricSource", "ScrapeFault",
           "ScrapePhase", "ServerCounters", "ServerGauges", "ServerMetrics"]

MetricKind = Literal["counter", "gauge"]
ScrapePhase = Literal["before", "during", "mark", "after"]

#: our vocabulary: each server metric's kind and meaning (the result fields' descriptions)
SERVER_METRICS: Mapping[str, tuple[MetricKind, str]] = MappingProxyType({
    "prompt_tokens": ("counter", "prompt tokens the engine prefilled"),
    "generation_tokens": ("counter", "tokens the engine generated"),
    "requests_finished": ("counter", "requests the engine finished, whatever the reason"),
    "preemptions": ("counter", "requests preempted (vLLM) or retracted (SGLang)"),
    "prefix_cache_queries": ("counter", "prompt tokens looked up in the prefix cache"),
    "prefix_cache_hits": ("counter", "prompt tokens found in the prefix cache"),
    "engine_steps": ("counter", "engine iterations: vLLM's steps with output (count of "
                                "its iteration_tokens histogram), llama.cpp's llama_decode "
                                "calls"),
    "spec_drafts": ("counter", "speculative drafts verified (steps that carried a draft)"),
    "spec_draft_tokens": ("counter", "draft tokens proposed"),
    "spec_accepted_tokens": ("counter", "draft tokens accepted"),
    "spec_accepted_per_position": ("counter", "accepted draft tokens by draft position "
                                              "(0-based), one value per position"),
    "kv_cache_usage": ("gauge", "KV-cache usage, a fraction (1 = full)"),
    "requests_running": ("gauge", "requests being processed"),
    "requests_waiting": ("gauge", "requests waiting for the engine (queued, deferred)"),
    "busy_slots_per_decode": ("gauge", "llama.cpp: busy slots per llama_decode call, a mean "
                                       "since start (older builds) or since the last scrape"),
    "spec_accept_length": ("gauge", "SGLang's own mean acceptance length"),
    "spec_accept_rate": ("gauge", "SGLang's own acceptance rate (accepted / draft tokens)"),
})


@dataclass(frozen=True, slots=True)
class MetricSource:
    """Where one word of the vocabulary is in an engine's ``/metrics``.

    ``names``: sample names as ``prometheus_client``'s parser yields them (a counter's with
    ``_total``), the first one present wins (renames across versions). Several label sets
    (engines, ranks, finish reasons) are combined by ``combine``; ``by_label`` keeps one value
    per value of that label instead. ``zero_when_absent``: the engine prints it only once
    non-zero, so its absence from the baseline scrape means 0.
    """

    names: tuple[str, ...]
    combine: Literal["sum", "max"] = "sum"
    by_label: str | None = None
    zero_when_absent: bool = False


@dataclass(frozen=True, slots=True)
class MetricNames:
    """One engine's ``/metrics``: where each word of :data:`SERVER_METRICS` is (a word left
    out: not exposed), whether the names were read from the source of the version measured
    here, and what its streamed chunks carry. Each engine's adapter holds its own
    (:mod:`benchlib.adapters`); checked against the vocabulary when made."""

    #: the engine kind, as results name it (``ServerMetrics.engine``)
    engine: str
    sources: Mapping[str, MetricSource]
    #: the names were read from the source of the engine version named in its adapter
    verified: bool = False
    #: why its chunks are not engine steps (None: one chunk per step)
    step_chunks: str | None = None

    def __post_init__(self) -> None:
        unknown = set(self.sources) - set(SERVER_METRICS)
        if unknown:
            raise ValueError(f"{self.engine}: not server metrics: {sorted(unknown)}")
        if not all((src.by_label is not None) == (name == "spec_accepted_per_position")
                   for name, src in self.sources.items()):
            raise ValueError(f"{self.engine}: only spec_accepted_per_position is by label")


def _doc(name: str) -> str:
    kind, meaning = SERVER_METRICS[name]
    how = ("increase over the scenario" if kind == "counter"
           else "peak and mean of the samples")
    return f"{meaning}: {how}; null when the server does not expose it"


class GaugeStats(BaseModel):
    """A gauge over the scenario's samples."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    peak: float = Field(description="largest sampled value")
    mean: float = Field(description="mean of the samples (evenly spaced: a time average)")
    samples: int = Field(description="samples that carried it")


class ServerCounters(BaseModel):
    """Each counter's increase from the baseline scrape to the last one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: float | None = Field(None, description=_doc("prompt_tokens"))
    generation_tokens: float | None = Field(None, description=_doc("generation_tokens"))
    requests_finished: float | None = Field(None, description=_doc("requests_finished"))
    preemptions: float | None = Field(None, description=_doc("preemptions"))
    prefix_cache_queries: float | None = Field(None, description=_doc("prefix_cache_queries"))
    prefix_cache_hits: float | None = Field(None, description=_doc("prefix_cache_hits"))
    engine_steps: float | None = Field(None, description=_doc("engine_steps"))
    spec_drafts: float | None = Field(None, description=_doc("spec_drafts"))
    spec_draft_tokens: float | None = Field(None, description=_doc("spec_draft_tokens"))
    spec_accepted_tokens: float | None = Field(None, description=_doc("spec_accepted_tokens"))
    spec_accepted_per_position: list[float] | None = Field(
        None, description=_doc("spec_accepted_per_position"))


class ServerGauges(BaseModel):
    """Each gauge's peak and mean over the samples from the baseline scrape to the last."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kv_cache_usage: GaugeStats | None = Field(None, description=_doc("kv_cache_usage"))
    requests_running: GaugeStats | None = Field(None, description=_doc("requests_running"))
    requests_waiting: GaugeStats | None = Field(None, description=_doc("requests_waiting"))
    busy_slots_per_decode: GaugeStats | None = Field(
        None, description=_doc("busy_slots_per_decode"))
    spec_accept_length: GaugeStats | None = Field(None, description=_doc("spec_accept_length"))
    spec_accept_rate: GaugeStats | None = Field(None, description=_doc("spec_accept_rate"))


assert set(ServerCounters.model_fields) == {
    k for k, (kind, _) in SERVER_METRICS.items() if kind == "counter"}
assert set(ServerGauges.model_fields) == {
    k for k, (kind, _) in SERVER_METRICS.items() if kind == "gauge"}


class ScrapeFault(BaseModel):
    """A scrape that brought nothing usable: recorded, never raised into the measurement."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    t_s: float = Field(description="seconds after the first scrape began")
    phase: ScrapePhase = Field(description="before, during, mark (the baseline after "
                                           "warmups) or after the scenario")
    error: str = Field(description="what went wrong, in words")


class ServerMetrics(BaseModel):
    """The server's metrics around one scenario: counters, gauges, the sampled series."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: str = Field(description="whose metric names were read (the engine kind)")
    verified: bool = Field(description="the names were read from the source of the engine "
                                       "versions named in the module (false: SGLang)")
    metrics_url: str = Field(description="the URL scraped")
    interval_s: float = Field(description="seconds between scrapes during the scenario")
    t0_perf_counter_s: float = Field(
        description="time.perf_counter() when the first scrape began: the clock of the "
                    "result's start_times, so the series can be laid over the requests")
    baseline: Literal["before", "mark"] = Field(
        description="the scrape counters are taken from: before the scenario, or the mark "
                    "taken after its warmups")
    window_s: tuple[float, float] | None = Field(
        description="baseline scrape → last scrape, in seconds after t0 (null: either failed, "
                    "so no counter is known)")
    scrapes: int = Field(description="scrapes that returned metrics")
    failed_scrapes: int = Field(description="scrapes that did not (see faults)")
    faults: list[ScrapeFault] = Field(description="the first faults, in order")
    counters: ServerCounters = Field(description="counters: increase over the window")
    gauges: ServerGauges = Field(description="gauges: peak and mean while sampled")
    missing: list[str] = Field(description="metrics this engine's table maps that the server "
                                           "did not expose (their values are null)")
    series_t_s: list[float] = Field(description="when each successful scrape began, seconds "
                                                "after t0")
    series: dict[str, list[float | None]] = Field(
        description="per metric, one value per successful scrape: gauges as read, counters as "
                    "the increase since the first scrape (per-position counters left out)")
