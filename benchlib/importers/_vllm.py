"""``vllm bench serve`` (and the older ``benchmarks/benchmark_serving.py``): its console block
and its result JSON (``--save-result``; ``--append-result`` makes it JSON Lines).

Read from vLLM's source (``vllm/benchmarks/serve.py`` ``benchmark`` and ``main_async``, and
``benchmarks/benchmark_serving.py``), every layout it has printed:

* every version: ``Successful requests``, ``Benchmark duration (s)``, ``Total input tokens``,
  ``Total generated tokens``, ``Request throughput (req/s)``, ``Output token throughput``, the
  ``Mean`` / ``Median`` / ``P{p}`` lines of TTFT, TPOT, ITL and (``--percentile-metrics``) E2EL,
  one ``P{p}`` line per ``--metric-percentiles`` entry;
* old (``benchmark_serving.py``): ``Total Token throughput`` (capital T), ``Request goodput``
  with SLOs, ``Input token throughput`` (2024); the JSON key ``"request_goodput:"`` (sic);
* ``vllm bench serve``: ``Failed requests``, ``Maximum request concurrency``, ``Request rate
  configured (RPS)`` (finite rates), ``Peak output token throughput`` / ``Peak concurrent
  requests`` (an int printed ``.2f``: ``43.00``), ``RTFx``, ``Total token throughput``; later
  the ``Client Queue Time`` / ``E2EL incl. Client Queue`` sections, the probe, speculative
  decoding and diffusion sections.

Before its block ``vllm bench serve`` prints ``Traffic request rate:``, ``Burstiness factor:``
and ``Maximum request concurrency:``; those lines, between the previous block and this one,
give ``request_rate`` (its full precision, where the block rounds it to 2 decimals),
``burstiness`` and ``max_concurrency``.

The console prints no version, model, date or prompt count: those are ``None``. Values come
back as printed (2 decimals). Sections other than vLLM's metrics go to ``extra`` under the
result JSON's names (``spec_decode_acceptance_rate`` …); the per-position acceptance is kept
as printed, in percent (``spec_decode_per_position_acceptance_pct``), where the JSON holds
fractions. The JSON's per-request lists (``ttfts``, ``itls``, ``latencies`` …) are not kept.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from benchlib.importers._common import (
    Malformed,
    Values,
    json_float,
    json_int,
    text_float,
)
from benchlib.importers._console import Block, Kind, apply_labels, read_value
from benchlib.importers._model import STAT_METRICS

__all__ = ["console_result", "is_vllm_json", "json_result"]

#: printed metric name → vLLM's
NAMES = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2el",
         "Client Queue Time": "client_queue_time",
         "E2EL incl. Client Queue": "e2el_including_client_queue"}

TABLE: dict[str, tuple[str, Kind]] = {
    "Successful requests:": ("completed", "int"),
    "Failed requests:": ("failed", "int"),
    "Maximum request concurrency:": ("max_concurrency", "limit"),
    "Request rate configured (RPS):": ("request_rate", "float"),
    "Benchmark duration (s):": ("duration", "float"),
    "Total input tokens:": ("total_input_tokens", "int"),
    "Total generated tokens:": ("total_output_tokens", "int"),
    "Request throughput (req/s):": ("request_throughput", "float"),
    "Input throughput (inputs/s):": ("extra:input_sequence_throughput", "float"),
    "Request goodput (req/s):": ("request_goodput", "float"),
    "Input token throughput (tok/s):": ("extra:input_throughput", "float"),
    "Output token throughput (tok/s):": ("output_throughput", "float"),
    "Peak output token throughput (tok/s):": ("max_output_tokens_per_s", "float"),
    "Peak concurrent requests:": ("max_concurrent_requests", "int"),
    "RTFx (Inverse Real-Time Factor):": ("rtfx", "float"),
    "Total Token throughput (tok/s):": ("total_token_throughput", "float"),
    "Total token throughput (tok/s):": ("total_token_throughput", "float"),
    "Probe requests completed:": ("extra:probe_completed", "int"),
    "Probe requests failed:": ("extra:probe_failed", "int"),
    "Median probe E2EL (ms):": ("extra:probe_median_e2el_ms", "float"),
    "P99 probe E2EL (ms):": ("extra:probe_p99_e2el_ms", "float"),
    "Max probe E2EL (ms):": ("extra:probe_max_e2el_ms", "float"),
    "Acceptance rate (%):": ("extra:spec_decode_acceptance_rate", "float"),
    "Acceptance length:": ("extra:spec_decode_acceptance_length", "float"),
    "Drafts:": ("extra:spec_decode_num_drafts", "int"),
    "Draft tokens:": ("extra:spec_decode_draft_tokens", "int"),
    "Accepted tokens:": ("extra:spec_decode_accepted_tokens", "int"),
    "Committed throughput (tok/s):": ("extra:diffusion_committed_throughput", "float"),
    "Denoising steps per canvas:": ("extra:diffusion_steps_per_canvas", "float"),
    "Committed per denoising step:": ("extra:diffusion_committed_per_step", "float"),
    "Committed tokens:": ("extra:diffusion_committed_tokens", "int"),
    "Denoising steps:": ("extra:diffusion_denoising_steps", "int"),
    "Canvas positions evaluated:": ("extra:diffusion_canvas_positions", "int"),
}
#: printed before the block: label → (key, kind)
PREAMBLE: dict[str, tuple[str, Kind]] = {
    "Traffic request rate:": ("request_rate", "rate"),
    "Burstiness factor:": ("burstiness", "rate"),
    "Maximum request concurrency:": ("max_concurrency", "limit"),
}
_POSITION = re.compile(r"^Position (\d+):$")


def console_result(block: Block) -> Values:
    """One console block (and the traffic lines printed before it) as vLLM's keys."""
    values: Values = {"source_format": "vllm-console"}
    extra: dict[str, Any] = {}
    positions: list[float] = []
    rest = []
    for line in block.lines:
        if line.section == "Speculative Decoding" and (m := _POSITION.match(line.label)):
            positions.append(text_float(line.value,
                                        f"{block.where(line)}: Position {m.group(1)}"))
        else:
            rest.append(line)
    apply_labels(dataclasses.replace(block, lines=tuple(rest)), TABLE, NAMES, values, extra)
    if positions:
        extra["spec_decode_per_position_acceptance_pct"] = positions
    before: Values = {}
    # the preamble is the lines just above the block: its first is line start - len(preamble)
    for n, raw in enumerate(block.preamble, block.start - len(block.preamble)):
        text = raw.strip()
        for label, (key, kind) in PREAMBLE.items():
            if text.startswith(label):
                before[key] = read_value(kind, text[len(label):].strip(),
                                         f"line {n}: {label[:-1]}")
    values.setdefault("max_concurrency", before.get("max_concurrency"))
    if "request_rate" in before:  # full precision; the block's line has 2 decimals
        values["request_rate"] = before["request_rate"]
    values["burstiness"] = before.get("burstiness")
    values["extra"] = extra
    return values


# --- the result JSON -----------------------------------------------------------------------

_HEADER_TEXT = ("date", "backend", "endpoint_type", "label", "model_id", "tokenizer_id")
_INTS = ("num_prompts", "max_concurrency", "completed", "failed", "total_input_tokens",
         "total_output_tokens", "max_concurrent_requests")
_FLOATS = ("duration", "request_throughput", "request_goodput", "output_throughput",
           "total_token_throughput", "max_output_tokens_per_s", "rtfx")
#: old spellings → today's
RENAMED = {"request_goodput:": "request_goodput"}
#: per-request lists (``--save-detailed``): not kept
PER_REQUEST = frozenset({"input_lens", "output_lens", "ttfts", "itls", "latencies",
                         "start_times", "queue_times", "generated_texts", "errors"})
_STAT_KEY = re.compile(r"^(?:mean|median|std|p\d+(?:\.\d+)?)_(\w+)_ms$")


def is_vllm_json(obj: dict[str, Any]) -> bool:
    """A ``vllm bench serve`` result object (or benchlib's, which has its keys)."""
    return "completed" in obj and "duration" in obj


def unlimited(value: Any, what: str) -> float | str | None:
    """A rate or burstiness: a number, or ``"inf"`` (text or an infinite float)."""
    if value is None or value == "inf":
        return None if value is None else "inf"
    number = json_float(value, what)
    return "inf" if number == math.inf else number


def json_result(obj: dict[str, Any], where: str) -> Values:
    """One result object of vLLM's JSON as vLLM's keys (they are its keys); ``where`` names
    it in errors."""
    benchlib = obj.get("backend") == "benchlib" and isinstance(obj.get("benchlib"), dict)
    values: Values = {"source_format": "benchlib-json" if benchlib else "vllm-json"}
    extra: dict[str, Any] = {}
    for raw_key, value in obj.items():
        key = RENAMED.get(raw_key, raw_key)
        what = f"{where}{raw_key}"
        if key in PER_REQUEST:
            continue
        if key in _HEADER_TEXT:
            if value is not None and not isinstance(value, str):
                raise Malformed(f"{what}: {value!r} is not text")
            values[key] = value
        elif key in _INTS:
            values[key] = json_int(value, what)
        elif key in _FLOATS:
            values[key] = json_float(value, what)
        elif key in ("request_rate", "burstiness"):
            values[key] = unlimited(value, what)
        elif (m := _STAT_KEY.match(key)) is not None and m.group(1) in STAT_METRICS:
            values[key] = json_float(value, what)
        else:
            extra[key] = value
    values["extra"] = extra
    return values
