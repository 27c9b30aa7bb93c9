"""``python -m sglang.bench_serving``: its console block and its JSON Lines result file
(``--output-file``; one object per run, appended).

Read from SGLang's source (``python/sglang/bench_serving.py`` ``benchmark``), whose block has
carried, over its versions: ``Backend``, ``Traffic request rate`` (a number, ``inf`` or
``trace``), ``Max request concurrency`` (``not set`` when unlimited; one version spelt it
``Max reqeuest concurrency``), ``Successful requests``, ``Benchmark duration (s)``, ``Total
input tokens`` (later also ``… text tokens`` / ``… vision tokens``), ``Total generated
tokens`` and ``(retokenized)``, ``Request throughput``, ``Input token throughput``, ``Output
token throughput``, ``Peak output token throughput``, ``Peak concurrent requests``, ``Total
token throughput`` (first ``Total throughput``), ``Concurrency``, ``Accept length`` (with
speculative decoding), then ``End-to-End Latency`` (Mean, Median, later P90, P99), ``Time to
First Token`` (Mean, Median, P99), ``Time per Output Token`` (later versions; Mean, Median,
P99) and ``Inter-Token Latency`` (Mean, Median, P95, P99, Max).

Mapped to vLLM's keys: the E2E latency statistics are ``*_e2el_ms``, ``total_throughput`` is
``total_token_throughput``. SGLang's TTFT and ITL start at the first chunk carrying text (vLLM
counts the first chunk with choices); its TPOT is vLLM's formula. Only SGLang has, in
``extra`` under its own names: ``concurrency`` (Σ latencies / duration, not a limit),
``accept_length`` (the server's mean speculative acceptance), ``input_throughput``,
``total_output_tokens_retokenized``, ``total_input_text_tokens`` /
``total_input_vision_tokens``, ``max_itl_ms``. SGLang reports no failed count, date or
burstiness (``None``). The JSON's ``server_info`` (the server's ``/get_server_info``) is kept
in ``extra``; its ``version`` is the ``source_version``: the SGLang server's version.
"""

from __future__ import annotations

import re
from typing import Any

from benchlib.importers._common import Malformed, Values, json_float, json_int
from benchlib.importers._console import Block, Kind, apply_labels
from benchlib.importers._vllm import PER_REQUEST, unlimited

__all__ = ["console_result", "is_sglang_block", "is_sglang_json", "json_result"]

NAMES = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2E Latency": "e2el"}
TABLE: dict[str, tuple[str, Kind]] = {
    "Backend:": ("backend", "str"),
    "Traffic request rate:": ("request_rate", "str"),
    "Max request concurrency:": ("max_concurrency", "limit"),
    "Max reqeuest concurrency:": ("max_concurrency", "limit"),
    "Successful requests:": ("completed", "int"),
    "Benchmark duration (s):": ("duration", "float"),
    "Total input tokens:": ("total_input_tokens", "int"),
    "Total input text tokens:": ("extra:total_input_text_tokens", "int"),
    "Total input vision tokens:": ("extra:total_input_vision_tokens", "int"),
    "Total generated tokens:": ("total_output_tokens", "int"),
    "Total generated tokens (retokenized):": ("extra:total_output_tokens_retokenized", "int"),
    "Request throughput (req/s):": ("request_throughput", "float"),
    "Input token throughput (tok/s):": ("extra:input_throughput", "float"),
    "Output token throughput (tok/s):": ("output_throughput", "float"),
    "Peak output token throughput (tok/s):": ("max_output_tokens_per_s", "float"),
    "Peak concurrent requests:": ("max_concurrent_requests", "int"),
    "Total token throughput (tok/s):": ("total_token_throughput", "float"),
    "Total throughput (tok/s):": ("total_token_throughput", "float"),
    "Concurrency:": ("extra:concurrency", "float"),
    "Accept length:": ("extra:accept_length", "float"),
    "Max ITL (ms):": ("extra:max_itl_ms", "float"),
}
#: labels only SGLang's block has
_OWN = ("Backend:", "Concurrency:", "Total generated tokens (retokenized):",
        "Mean E2E Latency (ms):")


def is_sglang_block(block: Block) -> bool:
    """Whether a ``Serving Benchmark Result`` block is SGLang's (vLLM's has none of its
    labels)."""
    return any(line.label in _OWN for line in block.lines)


_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")


def _rate(values: Values, extra: dict[str, Any]) -> None:
    """``Traffic request rate:`` as printed: ``inf``, a number, or a word (``trace``: the
    trace's own timestamps), which is no rate and stays in ``extra``."""
    rate = values.get("request_rate")
    if rate is None or rate == "inf":
        return
    if _NUMBER.match(rate):  # plain decimal digits: float() reads them as text_float does
        values["request_rate"] = float(rate)
    else:
        extra["request_rate"] = rate
        values["request_rate"] = None


def console_result(block: Block) -> Values:
    """One SGLang console block as vLLM's keys, SGLang's own in ``extra``."""
    values: Values = {"source_format": "sglang-console"}
    extra: dict[str, Any] = {}
    apply_labels(block, TABLE, NAMES, values, extra)
    _rate(values, extra)
    values["extra"] = extra
    return values


# --- the JSON Lines file -------------------------------------------------------------------

_INTS = ("max_concurrency", "completed", "total_input_tokens", "total_output_tokens",
         "max_concurrent_requests")
_FLOATS = ("duration", "request_throughput", "output_throughput", "max_output_tokens_per_s")
_E2E = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_e2e_latency_ms$")
_STAT_KEY = re.compile(r"^(?:mean|median|std|p\d+(?:\.\d+)?)_(\w+)_ms$")
_OWN_KEYS = ("total_output_tokens_retokenized", "accept_length", "server_info")


def is_sglang_json(obj: dict[str, Any]) -> bool:
    """An SGLang ``bench_serving`` result line (its E2E keys are named apart from vLLM's)."""
    return "completed" in obj and (any(_E2E.match(k) for k in obj)
                                   or any(k in obj for k in _OWN_KEYS))


def json_result(obj: dict[str, Any], where: str) -> Values:
    """One SGLang result line as vLLM's keys, SGLang's own in ``extra``."""
    values: Values = {"source_format": "sglang-jsonl"}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        what = f"{where}{key}"
        if key in PER_REQUEST:
            continue
        if key == "backend":
            if value is not None and not isinstance(value, str):
                raise Malformed(f"{what}: {value!r} is not text")
            values["backend"] = value
        elif key == "request_rate":
            if isinstance(value, str) and value != "inf":
                extra["request_rate"] = value  # "trace": the trace's own timestamps
                values["request_rate"] = None
            else:
                values["request_rate"] = unlimited(value, what)
        elif key in _INTS:
            values[key] = json_int(value, what)
        elif key in _FLOATS:
            values[key] = json_float(value, what)
        elif key == "total_throughput":
            values["total_token_throughput"] = json_float(value, what)
        elif (m := _E2E.match(key)) is not None:
            values[f"{m.group(1)}_e2el_ms"] = json_float(value, what)
        elif (m := _STAT_KEY.match(key)) is not None and m.group(1) in ("ttft", "tpot", "itl"):
            values[key] = json_float(value, what)
        else:
            extra[key] = value
    info = obj.get("server_info")
    if isinstance(info, dict) and isinstance(info.get("version"), str):
        values["source_version"] = info["version"]
    values["extra"] = extra
    return values
