"""Streaming measurement of OpenAI-compatible endpoints, with ``vllm bench serve``'s
definitions and JSON keys and the wire's accuracy (kernel receive stamps).

Typed at the boundaries: a :class:`Workload` (shared with the recipe's scenarios) inside a
:class:`MeasureConfig` goes in; a :class:`MeasureResult` (the result JSON) comes out, and a
:class:`RequestRecord` per request goes to the ``.requests.jsonl`` as each request ends.
Around a scenario, a :class:`MetricsSampler` reads the engine's own ``/metrics`` into a
:class:`ServerMetrics`, and :func:`spec_decode_report` sets its speculative-decoding counters
against what the client saw (:class:`ClientStreams`).
"""

from benchlib.measure.load._conversations import ConversationSummary, TurnSummary
from benchlib.measure.load._converse import planned_requests
from benchlib.measure.load._run import (
    build_requests,
    load_tokenizer,
    measure,
    repeat_configs,
    run_coroutine,
    trace_rate_check,
    warmup_bodies,
)
from benchlib.measure.load._tokens import stand_in_tokenizer
from benchlib.measure.results._records import RequestRecord, read_requests, requests_path
from benchlib.measure.results._report import format_result
from benchlib.measure.results._result import (
    METRICS,
    MeasureResult,
    RepeatSummary,
    RunMetrics,
    RunSettings,
    TokenSources,
    percentile_key,
)
from benchlib.measure.server._sampler import MetricsSampler, metrics_url
from benchlib.measure.server._server_metrics import (
    SERVER_METRICS,
    GaugeStats,
    MetricNames,
    MetricSource,
    ScrapeFault,
    ServerCounters,
    ServerGauges,
    ServerMetrics,
)
from benchlib.measure.server._spec import (
    ClientStreams,
    Reconciliation,
    SpecAcceptance,
    SpecDecodeReport,
    spec_decode_report,
)
from benchlib.measure.stats._intervals import Interval, Intervals
from benchlib.measure.stats._metrics import summarize
from benchlib.measure.stats._step_cost import (
    DecodeSteps,
    Projection,
    SpecCost,
    decode_steps,
    request_decode_rate,
    spec_cost,
)
from benchlib.measure.wire._connection import StreamCapture
from benchlib.measure.wire._decode import decode_capture
from benchlib.measure.wire._endpoint import Endpoint
from benchlib.measure.wire._limits import open_file_limit, raise_open_file_limit
from benchlib.measure.wire._request import Prompt, RequestOutcome, build_body
from benchlib.measure.wire._timing import Timing
from benchlib.measure.workload._config import TOKENIZER_REQUIRED, MeasureConfig
from benchlib.measure.workload._corpus import Corpus, Passage, load_corpus
from benchlib.measure.workload._datasets import (
    DatasetKind,
    file_prompts,
    length_range,
    random_prompts,
)
from benchlib.measure.workload._sampling import (
    LENGTH_KEYS,
    SAMPLING_KEYS,
    SERVER_DEFAULT,
    SentKeys,
    sent_keys,
)
from benchlib.measure.workload._seeds import (
    concurrency_seed,
    derive,
    probe_seed,
    ramp_seed,
    repeat_seed,
    sdk_seed,
    warmup_seed,
)
from benchlib.measure.workload._text_prompts import INSTRUCTIONS, text_prompts
from benchlib.measure.workload._workload import (
    EndpointSetting,
    OutputLen,
    RequestTimeout,
    Warmups,
    Workload,
)

__all__ = [
    "INSTRUCTIONS",
    "LENGTH_KEYS",
    "METRICS",
    "SAMPLING_KEYS",
    "SERVER_DEFAULT",
    "SERVER_METRICS",
    "TOKENIZER_REQUIRED",
    "ClientStreams",
    "ConversationSummary",
    "Corpus",
    "DatasetKind",
    "DecodeSteps",
    "Endpoint",
    "EndpointSetting",
    "GaugeStats",
    "Interval",
    "Intervals",
    "MeasureConfig",
    "MeasureResult",
    "MetricNames",
    "MetricSource",
    "MetricsSampler",
    "OutputLen",
    "Passage",
    "Projection",
    "Prompt",
    "Reconciliation",
    "RepeatSummary",
    "RequestOutcome",
    "RequestRecord",
    "RequestTimeout",
    "RunMetrics",
    "RunSettings",
    "ScrapeFault",
    "SentKeys",
    "ServerCounters",
    "ServerGauges",
    "ServerMetrics",
    "SpecAcceptance",
    "SpecCost",
    "SpecDecodeReport",
    "StreamCapture",
    "Timing",
    "TokenSources",
    "TurnSummary",
    "Warmups",
    "Workload",
    "build_body",
    "build_requests",
    "concurrency_seed",
    "decode_capture",
    "decode_steps",
    "derive",
    "file_prompts",
    "format_result",
    "length_range",
    "load_corpus",
    "load_tokenizer",
    "measure",
    "metrics_url",
    "open_file_limit",
    "percentile_key",
    "planned_requests",
    "probe_seed",
    "raise_open_file_limit",
    "ramp_seed",
    "random_prompts",
    "read_requests",
    "repeat_configs",
    "repeat_seed",
    "request_decode_rate",
    "requests_path",
    "run_coroutine",
    "sdk_seed",
    "sent_keys",
    "spec_cost",
    "spec_decode_report",
    "stand_in_tokenizer",
    "summarize",
    "text_prompts",
    "trace_rate_check",
    "warmup_bodies",
    "warmup_seed",
]
