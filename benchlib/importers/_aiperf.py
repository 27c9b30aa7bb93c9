"""AIPerf's summary export, ``profile_export_aiperf.json``.

Read from AIPerf's source and docs (``src/aiperf/common/models/export_models.py``
``JsonExportData`` / ``JsonMetricResult``, ``docs/reference/json-export-schema.md``,
``docs/metrics-reference.md``; the first releases' ``aiperf/exporters/json_exporter.py``):
each metric is a block ``{"unit": …, "avg": …, "p1" … "p99", "min", "max", "std", "count",
"sum"}`` with only the fields that apply; scalars (throughputs, counts, duration) carry
``unit`` and ``avg``. Newer files put the blocks at the top level under tags like
``time_to_first_token`` beside ``aiperf_version`` and ``schema_version``; the first releases
nested them under ``records`` with tags like ``ttft``. Both are read.

Mapped to vLLM's keys, with the block's ``unit`` converted exactly (``s``/``sec`` × 1000,
``us`` ÷ 1000, ``ns`` ÷ 10⁶ to ms):

* ``time_to_first_token`` (``ttft``) → ``*_ttft_ms`` (AIPerf: first non-empty content chunk);
  ``request_latency`` → ``*_e2el_ms``; ``inter_token_latency`` → ``*_tpot_ms``: AIPerf's ITL is
  (latency − TTFT) / (OSL − 1) per request, which is vLLM's TPOT. ``avg`` → mean, ``p50`` →
  median (and ``p50``), ``p1`` … ``p99`` → percentiles;
* ``request_throughput``, ``output_token_throughput``, ``total_token_throughput``, ``goodput``
  → vLLM's throughputs (per second); ``benchmark_duration`` → ``duration`` (seconds);
  ``request_count`` → ``completed`` (AIPerf counts successful requests), ``error_request_count``
  → ``failed``; ``total_isl`` / ``total_osl`` → ``total_input_tokens`` /
  ``total_output_tokens`` (OSL includes reasoning tokens, as vLLM's usage count does).

Not mapped: AIPerf's ``std`` is the *sample* standard deviation (vLLM's is the population's),
so it stays in ``extra`` with ``min`` / ``max`` / ``count`` / ``sum`` under the metric's tag;
``inter_chunk_latency`` (a per-request average in early releases, pooled gaps later: the file
does not say which) and every other metric go to ``extra`` as written. A file without
``error_request_count`` has ``failed = None`` (AIPerf omits it when there are no errors, but
omission is not a count). ``input_config`` is not stable across versions: its
``loadgen.concurrency`` / ``loadgen.request_rate`` (a number where present: ``true`` is
malformed, not a concurrency of 1) and ``endpoint.model_names[0]`` are read where present.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from benchlib.importers._common import (
    MS_PER_S,
    ONE,
    Malformed,
    Values,
    json_float,
    json_int,
    member,
    percentile_key,
)

__all__ = ["is_aiperf_json", "result"]

#: AIPerf tag (old tags too) → vLLM metric
LATENCIES = {"time_to_first_token": "ttft", "ttft": "ttft", "request_latency": "e2el",
             "inter_token_latency": "tpot"}
_PER_S = {"requests/sec": ONE, "requests/s": ONE}
_TOKENS_PER_S = {"tokens/sec": ONE, "tokens/s": ONE}
#: scalar tag → (vLLM key, its units → factor to vLLM's unit, whole number?)
SCALARS: dict[str, tuple[str, dict[str, Decimal], bool]] = {
    "request_throughput": ("request_throughput", _PER_S, False),
    "output_token_throughput": ("output_throughput", _TOKENS_PER_S, False),
    "total_token_throughput": ("total_token_throughput", _TOKENS_PER_S, False),
    "goodput": ("request_goodput", _PER_S, False),
    "benchmark_duration": ("duration", {"sec": ONE, "s": ONE, "ms": Decimal("0.001")}, False),
    "request_count": ("completed", {"requests": ONE}, True),
    "error_request_count": ("failed", {"requests": ONE}, True),
    "total_isl": ("total_input_tokens", {"tokens": ONE}, True),
    "total_osl": ("total_output_tokens", {"tokens": ONE}, True),
}
#: a time unit → factor to ms
TO_MS = {"ms": ONE, "s": MS_PER_S, "sec": MS_PER_S, "us": Decimal("0.001"),
         "ns": Decimal("0.000001")}
_PCTS = ("p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99")
_TOP = frozenset({"schema_version", "aiperf_version", "benchmark_id", "input_config",
                  "run_info", "was_cancelled", "error_summary", "start_time", "end_time",
                  "telemetry_data", "records"})


def _blocks(obj: dict[str, Any]) -> dict[str, Any]:
    records = obj.get("records")
    if isinstance(records, dict):
        return records
    return {k: v for k, v in obj.items() if isinstance(v, dict) and "unit" in v}


def is_aiperf_json(obj: dict[str, Any]) -> bool:
    """An AIPerf summary: ``aiperf_version``, or metric blocks with a ``unit`` under AIPerf's
    tags (at the top level or under ``records``)."""
    if "aiperf_version" in obj:
        return True
    blocks = _blocks(obj)
    return any(tag in blocks for tag in (*LATENCIES, *SCALARS))


def _latency(block: dict[str, Any], metric: str, what: str, values: Values) -> dict[str, Any]:
    unit = block.get("unit")
    if unit not in TO_MS:
        raise Malformed(f"{what}.unit: {unit!r} is not a time unit (ms, s, sec, us, ns)")
    scale = TO_MS[unit]
    rest = {k: v for k, v in block.items() if k not in ("tag", "header")}
    values[f"mean_{metric}_ms"] = json_float(rest.pop("avg", None), f"{what}.avg", scale)
    if "p50" in rest:
        values[f"median_{metric}_ms"] = json_float(rest["p50"], f"{what}.p50", scale)
    for p in _PCTS:
        if p in rest:
            values[f"{percentile_key(p[1:])}_{metric}_ms"] = json_float(rest.pop(p),
                                                                        f"{what}.{p}", scale)
    return rest


def _scalar(block: dict[str, Any], key: str, units: dict[str, Decimal], whole: bool,
            what: str, values: Values) -> None:
    unit = block.get("unit")
    if unit not in units:
        raise Malformed(f"{what}.unit: {unit!r}, expected one of {', '.join(units)}")
    if whole:
        values[key] = json_int(block.get("avg"), f"{what}.avg")
    else:
        values[key] = json_float(block.get("avg"), f"{what}.avg", units[unit])


def _config(obj: dict[str, Any], values: Values, where: str) -> None:
    config = member(obj, "input_config")
    loadgen = member(config, "loadgen")
    at = f"{where}input_config.loadgen"
    # a value present must be a number: json_int / json_float refuse a bool (an int in Python)
    values["max_concurrency"] = json_int(loadgen.get("concurrency"), f"{at}.concurrency")
    values["request_rate"] = json_float(loadgen.get("request_rate"), f"{at}.request_rate")
    names = member(config, "endpoint").get("model_names")
    if isinstance(names, list) and names and isinstance(names[0], str):
        values["model_id"] = names[0]


def result(obj: dict[str, Any], where: str) -> Values:
    """An AIPerf summary as vLLM's keys; the rest in ``extra`` under AIPerf's tags."""
    values: Values = {"source_format": "aiperf-json"}
    extra: dict[str, Any] = {}
    version = obj.get("aiperf_version")
    values["source_version"] = version if isinstance(version, str) else None
    prefix = f"{where}records." if isinstance(obj.get("records"), dict) else where
    for tag, block in _blocks(obj).items():
        what = f"{prefix}{tag}"
        if not isinstance(block, dict):
            raise Malformed(f"{what}: expected a metric block (unit, avg, …)")
        if tag in LATENCIES:
            rest = _latency(block, LATENCIES[tag], what, values)
            if rest.keys() - {"unit"}:
                extra[tag] = rest
        elif tag in SCALARS:
            _scalar(block, *SCALARS[tag], what, values)
        else:
            extra[tag] = block
    for key in ("schema_version", "benchmark_id", "was_cancelled", "start_time", "end_time",
                "error_summary"):
        if key in obj:
            extra[key] = obj[key]
    for key, value in obj.items():  # a newer top-level key that is not a metric block
        if key not in _TOP and key not in extra and not (isinstance(value, dict)
                                                         and "unit" in value):
            extra[key] = value
    _config(obj, values, where)
    values["extra"] = extra
    return values
