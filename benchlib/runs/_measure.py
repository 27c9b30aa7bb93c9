"""03_measure's results, typed: one :class:`Measurement` per scenario and concurrency, one
:class:`Ramp` per long-context ramp, the accuracy run's score and why measuring stopped.

The results file stays what the notebook has always written, one flat JSON object:
``scenario/cN`` → a measurement, ``scenario/ramp`` → a ramp, ``accuracy/<task>`` → a score,
``engine_lost`` (the engine stopped answering) and ``engine_exit`` (the runner's record of an
engine that died, in the sidecar's copy). :class:`MeasureStep` reads that object into its
typed groups and writes it back flat (:meth:`MeasureStep.flat`), so old run folders load
and a reader names fields, not keys: a field renamed here fails mypy where it is read.

A measurement is :class:`benchlib.measure.MeasureResult`'s aggregates (the per-request arrays
stay in the measure JSON beside) plus what the step adds: the server's ``/metrics`` summary,
the speculative acceptance it reports, the KV use against the plan, the energy and what the
openai SDK saw. The aggregates a reader uses are fields; the rest of the result's keys (its
header, percentiles, settings …) ride along as JSON, unchanged.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_serializer, model_validator
from pydantic_core.core_schema import SerializerFunctionWrapHandler

from benchlib.accuracy import AccuracyResult, FewShotResult
from benchlib.checks import SdkView
from benchlib.energy import EnergyResult
from benchlib.measure import ConversationSummary, Intervals, RepeatSummary, RunSettings

__all__ = ["AccuracyFailed", "EngineLost", "KvVsPlan", "MeasureStep", "Measurement", "Ramp",
           "RampStep", "ServerSide", "SpeculativeSide", "TimingSide"]


class ServerSide(BaseModel):
    """The engine's ``/metrics`` over the measurement, summarised (the whole record lies in
    ``file``, beside the result JSON)."""

    file: str | None = Field(None, description="<result>.server.json, beside the result")
    scrapes: int | None = Field(None, description="scrapes that answered")
    failed_scrapes: int | None = Field(None, description="scrapes that did not")
    missing: list[str] = Field(default_factory=list, description="metrics the server lacked")
    kv_cache_usage_peak: float | None = Field(None, description="peak KV-cache use (1.0: full)")
    requests_running_peak: float | None = Field(None, description="peak running requests")
    requests_waiting_peak: float | None = Field(None, description="peak queued requests")
    preemptions: float | None = Field(None, description="preemptions during the run")
    prefix_cache_hit_rate: float | None = Field(None, description="prefix-cache hits / queries")
    generation_tokens: float | None = Field(None, description="tokens the server generated")
    engine_steps: float | None = Field(None, description="the engine's decode steps")


class SpeculativeSide(BaseModel):
    """A speculating engine's acceptance as it reports it, set against the client's view
    (:func:`benchlib.measure.spec_decode_report`)."""

    method: str | None = Field(None, description="the recipe's speculation, as a label")
    source: str | None = Field(None, description="where the server's figures came from")
    acceptance_rate: float | None = Field(None, description="accepted / drafted tokens")
    mean_acceptance_length: float | None = Field(None, description="tokens per engine step")
    per_position_acceptance: list[float] | None = Field(None, description="per draft slot")
    draft_tokens: float | None = Field(None, description="tokens drafted")
    accepted_tokens: float | None = Field(None, description="tokens accepted")
    client_tokens_per_chunk: float | None = Field(None, description="the client's view")
    client_accepted_tokens: int | None = Field(None, description="accepted, by the client")
    reconciled: bool | None = Field(None, description="server and client agree")
    why_not: str | None = Field(None, description="why they do not")
    accepted_rel_diff: float | None = Field(None, description="relative difference, accepted")
    output_rel_diff: float | None = Field(None, description="relative difference, output")
    truncation_allowance: float | None = Field(None, description="allowed for truncation")
    residual_within_allowance: bool | None = Field(None, description="the rest within it")
    timings_rel_diff: float | None = Field(None, description="llama.cpp's timings' difference")


class TimingSide(BaseModel):
    """The result's ``timing`` block (:class:`benchlib.measure.Timing`): how far its times
    can be trusted. The figures the table reads are fields; the rest rides along as JSON
    (an older result's block lacks some of today's)."""

    # open JSON: the rest of benchlib.measure.Timing's keys, as written
    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    exact_ttft_fraction: float | None = Field(None, description="TTFTs stamped exactly")
    client_bound: bool | None = Field(None, description="the client limited the accuracy")
    client_bound_figures: dict[str, float] = Field(
        default_factory=dict, description="figure → the share its late reads could move it")


class KvVsPlan(BaseModel):
    """The engine's peak KV use beside what 02_launch's plan expects of the scenario."""

    peak: float | None = Field(None, description="the engine's peak (its /metrics)")
    expected: float = Field(description="concurrency × tokens per request over the capacity")
    capacity_tokens: int = Field(description="the plan's KV capacity for this engine")
    tokens_per_request: int = Field(description="input + output tokens of one request")
    capacity_flagged: bool = Field(description="the engine's capacity differs from the plan's")


class Measurement(BaseModel):
    """One scenario at one concurrency: the result's aggregates and the step's additions.

    The fields are what readers use; every other key of the result JSON's object (its
    header, percentiles, settings, repeats, intervals …) is kept as JSON, as it was written.
    """

    # open JSON: the rest of MeasureResult's keys, carried as they are
    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    scenario: str = Field("", description="the recipe's scenario")
    concurrency: int = Field(0, description="requests in flight at once")
    input_len: int | None = Field(None, description="the scenario's input tokens")
    output_len: int | None = Field(None, description="the scenario's output tokens")
    result_json: str = Field("", description="the whole result, per-request arrays too")
    first_errors: list[str] = Field(default_factory=list, description="up to three errors")
    seeding: str | None = Field(None, description="how this concurrency's prompts were "
                                "seeded: the recipe's concurrency_seeds (derived or same)")
    endpoint_type: str | None = Field(None, description="chat or completions")
    completed: int = Field(0, description="successful requests")
    failed: int = Field(0, description="failed requests")
    duration: float | None = Field(None, description="seconds of the load")
    total_input_tokens: int | None = Field(None, description="Σ prompt tokens")
    total_output_tokens: int | None = Field(None, description="Σ output tokens")
    output_throughput: float | None = Field(None, description="output tokens per second")
    median_ttft_ms: float | None = Field(None, description="vLLM's median TTFT")
    median_ttft_text_ms: float | None = Field(None, description="median TTFT to text")
    p99_ttft_ms: float | None = Field(None, description="vLLM's p99 TTFT")
    median_tpot_ms: float | None = Field(None, description="vLLM's median TPOT")
    median_tpot_text_ms: float | None = Field(None, description="median TPOT after text")
    p99_tpot_ms: float | None = Field(None, description="vLLM's p99 TPOT")
    median_itl_ms: float | None = Field(None, description="vLLM's median ITL")
    median_e2el_ms: float | None = Field(None, description="vLLM's median E2EL")
    median_ttft_from_schedule_ms: float | None = Field(
        None, description="a paced load's TTFT from the schedule's due time")
    p99_ttft_from_schedule_ms: float | None = Field(None, description="its p99")
    median_client_queue_time_ms: float | None = Field(None, description="waiting for a slot")
    request_rate: float | str | None = Field(None, description="requests/s ('inf': at once)")
    mean_tokens_per_chunk: float | None = Field(None, description="≈ acceptance length")
    max_itl_ms: float | None = Field(None, description="the longest of vLLM's ITLs")
    mean_request_decode_rate: float | None = Field(
        None, description="each request's decode rate (1000 / its TPOT), then the mean, tok/s")
    median_text_chunks_per_s: float | None = Field(
        None, description="per request, text chunks per second after the first (a chunk "
                          "counted as a token, as seed 000's scripts print tokens/sec), median")
    buffered_streams: int | None = Field(None, description="streams that arrived in bursts")
    text_free_requests: int | None = Field(None, description="tokens that came without text")
    synthetic: bool | None = Field(None, description="answered by the scripted server")
    benchlib: RunSettings | None = Field(None, description="benchlib's settings of the run")
    repeats: list[RepeatSummary] | None = Field(None, description="every repeat's figures")
    intervals: Intervals | None = Field(None, description="headline figures, 95 % intervals")
    conversations: ConversationSummary | None = Field(None, description="per-turn view")
    timing: TimingSide | None = Field(None, description="how far these times can be trusted")
    server_metrics: ServerSide | None = Field(None, description="the engine's /metrics")
    speculative: SpeculativeSide | None = Field(None, description="the server's acceptance")
    kv_usage_vs_plan: KvVsPlan | None = Field(None, description="KV use against the plan")
    energy: EnergyResult | None = Field(None, description="the devices' energy (or why none)")
    sdk: SdkView | None = Field(None, description="the same load through the openai SDK")

    @property
    def per_user_tok_s(self) -> float | None:
        """Decode speed per user: 1000 / median TPOT after the first text (vLLM's TPOT starts
        at a role chunk), else vLLM's TPOT; None without one."""
        tpot = self.median_tpot_text_ms or self.median_tpot_ms
        return 1000.0 / tpot if tpot else None

    @property
    def extra(self) -> dict[str, JsonValue]:
        """The result keys that are not fields (header, percentiles, settings …)."""
        return dict(self.model_extra or {})


class RampStep(BaseModel):
    """One length of a ramp: its one request."""

    input_len: int = Field(description="prompt tokens")
    ok: bool = Field(description="the request completed")
    ttft_ms: float | None = Field(None, description="its TTFT (null: failed)")
    tpot_ms: float | None = Field(None, description="its TPOT (null: failed)")
    error: str = Field("", description="why it failed")


class Ramp(BaseModel):
    """A long-context ramp: one request per input length, going up, until one fails."""

    scenario: str = Field(description="the recipe's scenario")
    kind: Literal["ramp"] = Field("ramp", description="always ramp")
    endpoint: str = Field("", description="chat or completions")
    input_lens: list[int] = Field(default_factory=list, description="the lengths, in order")
    steps: list[RampStep] = Field(default_factory=list, description="the lengths tried")
    max_completed_input_len: int | None = Field(None, description="the longest that completed")
    failed_at_input_len: int | None = Field(None, description="the first that failed")
    error: str | None = Field(None, description="that request's error")
    engine_alive_after: bool = Field(True, description="whether the engine survived it")


class EngineLost(BaseModel):
    """The engine stopped answering after a scenario: the rest were not run."""

    after_scenario: str = Field(description="the last scenario it answered")
    error: str = Field(description="what was seen")


class AccuracyFailed(BaseModel):
    """An accuracy run that raised."""

    error: str = Field(description="why")


Accuracy = AccuracyResult | FewShotResult | AccuracyFailed


def _accuracy(task: str, value: object) -> Accuracy:
    if isinstance(value, dict) and "error" in value and "n" not in value:
        return AccuracyFailed.model_validate(value)
    if task == "few_shot_gsm8k":
        return FewShotResult.model_validate(value)
    return AccuracyResult.model_validate(value)


class MeasureStep(BaseModel):
    """03_measure's results, grouped by kind; read from and written as the flat object."""

    measurements: dict[str, Measurement] = Field(
        default_factory=dict, description="scenario/cN → that concurrency's measurement")
    ramps: dict[str, Ramp] = Field(default_factory=dict, description="scenario → its ramp")
    accuracy: dict[str, Accuracy] = Field(default_factory=dict,
                                          description="task → the accuracy run's score")
    engine_lost: EngineLost | None = Field(None, description="why measuring stopped")
    # a JSON boundary: the runner's record of a dead engine, any step's (pipeline._engine)
    engine_exit: dict[str, JsonValue] | None = Field(
        None, description="the runner's record of an engine that exited (sidecar only)")

    @model_validator(mode="before")
    @classmethod
    def _group(cls, data: object) -> object:
        """The flat results object → its groups (an already grouped one passes)."""
        if not isinstance(data, dict) or set(data) <= set(cls.model_fields):
            return data
        out: dict[str, dict[str, object]] = {"measurements": {}, "ramps": {}, "accuracy": {}}
        grouped: dict[str, object] = dict(out)
        for key, value in data.items():
            if key in ("engine_lost", "engine_exit"):
                grouped[key] = value
            elif key.startswith("accuracy/"):
                out["accuracy"][key.split("/", 1)[1]] = _accuracy(key.split("/", 1)[1], value)
            elif key.endswith("/ramp"):
                out["ramps"][key.rsplit("/", 1)[0]] = value
            elif "/c" in key:
                out["measurements"][key] = value
        return grouped

    def model_post_init(self, context: object, /) -> None:
        """Every group counts as given: a record added to one is saved even when the
        results are written with only their given keys (``exclude_unset``)."""
        self.__pydantic_fields_set__.update(type(self).model_fields)

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """Written flat, as the notebook always wrote it."""
        data = handler(self)
        out: dict[str, object] = dict(data.get("measurements") or {})
        out.update({f"{s}/ramp": r for s, r in (data.get("ramps") or {}).items()})
        out.update({f"accuracy/{t}": a for t, a in (data.get("accuracy") or {}).items()})
        for key in ("engine_lost", "engine_exit"):
            if data.get(key) is not None:
                out[key] = data[key]
        return out

    @staticmethod
    def key(scenario: str, concurrency: int) -> str:
        """A measurement's key: ``scenario/cN``."""
        return f"{scenario}/c{concurrency}"

    def measurement(self, scenario: str, concurrency: int) -> Measurement | None:
        """The measurement of ``scenario`` at ``concurrency``, if taken."""
        return self.measurements.get(self.key(scenario, concurrency))

    @property
    def synthetic(self) -> bool | None:
        """Whether a measurement was answered by benchlib's scripted server (canned timings,
        no engine); None when none says."""
        flags = [m.synthetic for m in self.measurements.values() if m.synthetic is not None]
        return any(flags) if flags else None
