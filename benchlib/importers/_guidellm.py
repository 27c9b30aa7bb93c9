"""GuideLLM's JSON report (``benchmarks.json``, ``GenerativeBenchmarksReport``): one result per
benchmark of ``benchmarks``.

Read from GuideLLM's source (``src/guidellm/benchmark/schemas/generative/metrics.py`` and
``benchmark.py``, ``src/guidellm/schemas/statistics.py``; the older
``src/guidellm/benchmark/benchmark.py``): each metric is a ``StatusDistributionSummary`` with
``successful`` / ``incomplete`` / ``errored`` / ``total`` ``DistributionSummary`` objects
(``mean``, ``median``, ``mode``, ``variance``, ``std_dev``, ``min``, ``max``, ``count``,
``total_sum``, ``percentiles`` ``p001`` … ``p999``). Only the ``successful`` distributions are
read (vLLM's statistics are over successful requests); the others are not kept.

Mapped to vLLM's keys, the successful distribution's:

* ``time_to_first_token_ms`` → ``*_ttft_ms``; ``request_latency`` (**seconds**) →
  ``*_e2el_ms``, converted exactly (× 1000 on the decimal text): ``mean``, ``median``,
  ``std_dev`` (population, as vLLM's), percentiles ``p001`` → ``p0.1`` … ``p999`` → ``p99.9``.
  GuideLLM's median and percentiles are read off its distribution without interpolation
  (``searchsorted``), vLLM's with numpy's linear interpolation: close, not identical;
* ``requests_per_second`` / ``output_tokens_per_second`` / ``tokens_per_second`` ``mean`` →
  ``request_throughput`` / ``output_throughput`` / ``total_token_throughput`` (a rate
  distribution's time-weighted mean: the count over the measured window);
* ``prompt_token_count`` / ``output_token_count`` ``total_sum`` → ``total_input_tokens`` /
  ``total_output_tokens`` when it is a whole number (newer GuideLLM writes ``mean × count``);
* ``request_totals`` → ``completed`` (successful), ``failed`` (errored); ``incomplete`` goes to
  ``extra["incomplete_requests"]``; ``duration`` (the measured window, seconds) → ``duration``;
  a ``concurrent`` strategy's ``streams`` → ``max_concurrency``, a ``constant`` / ``poisson``
  strategy's ``rate`` → ``request_rate`` (the strategy itself in ``extra["strategy"]``).

Not mapped, kept in ``extra`` as GuideLLM writes them (its units): ``inter_token_latency_ms``
(per request it is vLLM's TPOT, but ``GenerativeMetrics.compile`` weights each request by its
N − 1 tokens, so the mean and percentiles are per token, not vLLM's per request),
``time_per_output_token_ms`` (divided by all N tokens, weighted by N), ``request_concurrency``
and the rest of every metric's summary (``mode``, ``variance``, ``min``, ``max`` …). GuideLLM has no
ITL distribution in vLLM's sense, no goodput, burstiness, date or prompt count (``None``). The
version is ``metadata.guidellm_version`` where the report has it; the model is ``args.model``
(newer) or the benchmark's ``worker.backend_model`` (older).
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

__all__ = ["is_guidellm_json", "results"]

#: GuideLLM's percentile names → the percentile
PERCENTILES = {"p001": "0.1", "p01": "1", "p05": "5", "p10": "10", "p25": "25", "p50": "50",
               "p75": "75", "p90": "90", "p95": "95", "p99": "99", "p999": "99.9"}
#: latency distributions → (vLLM metric, factor to ms)
LATENCIES: dict[str, tuple[str, Decimal]] = {"time_to_first_token_ms": ("ttft", ONE),
                                             "request_latency": ("e2el", MS_PER_S)}
RATES = {"requests_per_second": "request_throughput",
         "output_tokens_per_second": "output_throughput",
         "tokens_per_second": "total_token_throughput"}
TOTALS = {"prompt_token_count": "total_input_tokens",
          "output_token_count": "total_output_tokens"}
_DROPPED = ("pdf", "cumulative_distribution_function")


def is_guidellm_json(obj: dict[str, Any]) -> bool:
    """A GuideLLM report: ``benchmarks``, each with ``metrics``."""
    benchmarks = obj.get("benchmarks")
    return (isinstance(benchmarks, list) and bool(benchmarks)
            and all(isinstance(b, dict) and isinstance(b.get("metrics"), dict)
                    for b in benchmarks))


def _successful(metric: Any, what: str) -> dict[str, Any] | None:
    """The successful requests' ``DistributionSummary`` of a status distribution, or ``None``
    when the metric is not one (a nested per-modality summary)."""
    if not isinstance(metric, dict) or "successful" not in metric:
        return None
    summary = metric["successful"]
    if not isinstance(summary, dict) or "mean" not in summary:
        raise Malformed(f"{what}.successful: expected a distribution summary (mean, median, "
                        "percentiles …)")
    return {k: v for k, v in summary.items() if k not in _DROPPED}


def _latency(summary: dict[str, Any], metric: str, scale: Decimal, what: str,
             values: Values) -> None:
    values[f"mean_{metric}_ms"] = json_float(summary.pop("mean"), f"{what}.mean", scale)
    for theirs, ours in (("median", "median"), ("std_dev", "std")):
        if theirs in summary:
            values[f"{ours}_{metric}_ms"] = json_float(summary.pop(theirs), f"{what}.{theirs}",
                                                        scale)
    percentiles = summary.pop("percentiles", None) or {}
    if not isinstance(percentiles, dict):
        raise Malformed(f"{what}.percentiles: expected an object of p001 … p999")
    for name, value in percentiles.items():
        if name not in PERCENTILES:
            raise Malformed(f"{what}.percentiles: unknown percentile {name!r}")
        values[f"{percentile_key(PERCENTILES[name])}_{metric}_ms"] = json_float(
            value, f"{what}.percentiles.{name}", scale)


def _strategy(bench: dict[str, Any], values: Values, extra: dict[str, Any], what: str) -> None:
    holder = "config" if member(bench, "config").get("strategy") else "args"  # newer, older
    strategy = member(bench, holder).get("strategy")
    if not isinstance(strategy, dict):
        return
    what = f"{what}.{holder}.strategy"
    extra["strategy"] = strategy
    kind = strategy.get("type_")
    if kind == "concurrent" and "streams" in strategy:
        values["max_concurrency"] = json_int(strategy["streams"], f"{what}.streams")
    if kind in ("constant", "poisson") and "rate" in strategy:
        values["request_rate"] = json_float(strategy["rate"], f"{what}.rate")


def _benchmark(bench: dict[str, Any], what: str) -> Values:
    values: Values = {"source_format": "guidellm-json"}
    extra: dict[str, Any] = {}
    metrics: dict[str, Any] = bench["metrics"]
    holder = metrics if "request_totals" in metrics else bench  # newer, older
    totals = holder.get("request_totals")
    if not isinstance(totals, dict) or "successful" not in totals:
        raise Malformed(f"{what}: no request_totals (successful, incomplete, errored)")
    at = f"{what}{'.metrics' if holder is metrics else ''}.request_totals"
    values["completed"] = json_int(totals["successful"], f"{at}.successful")
    values["failed"] = json_int(totals.get("errored"), f"{at}.errored")
    if "incomplete" in totals:
        extra["incomplete_requests"] = json_int(totals["incomplete"], f"{at}.incomplete")
    values["duration"] = json_float(bench.get("duration"), f"{what}.duration")
    _strategy(bench, values, extra, what)
    worker = member(bench, "worker")
    if isinstance(worker.get("backend_model"), str):
        values["model_id"] = worker["backend_model"]
    for key in ("start_time", "end_time"):
        if isinstance(bench.get(key), int | float):
            extra[key] = bench[key]
    for name, metric in metrics.items():
        if name == "request_totals":
            continue
        where = f"{what}.metrics.{name}"
        summary = _successful(metric, where)
        if summary is None:
            continue
        if name in LATENCIES:
            _latency(summary, *LATENCIES[name], f"{where}.successful", values)
        elif name in RATES:
            values[RATES[name]] = json_float(summary.pop("mean"), f"{where}.successful.mean")
        elif name in TOTALS and isinstance(summary.get("total_sum"), int | float):
            total = Decimal(repr(summary["total_sum"]))
            if total == total.to_integral_value():
                values[TOTALS[name]] = int(total)
                summary.pop("total_sum")
        if summary:
            extra[name] = summary
    values["extra"] = extra
    return values


def results(obj: dict[str, Any], where: str) -> list[Values]:
    """One result per benchmark of a GuideLLM report."""
    version = member(obj, "metadata").get("guidellm_version")
    model = member(obj, "args").get("model")
    out = []
    for i, bench in enumerate(obj["benchmarks"]):
        values = _benchmark(bench, f"{where}benchmarks[{i}]")
        values["source_version"] = version if isinstance(version, str) else None
        if isinstance(model, str):
            values.setdefault("model_id", model)
        out.append(values)
    return out
