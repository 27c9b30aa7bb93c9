"""GuideLLM's report field by field: every value where it belongs, what is kept in extra and
what is skipped, and each error naming the full path of the value that is wrong.

test_guidellm.py reads the sample report; these tests build small reports whose every value
is distinct, so a value read into the wrong key, or an error naming a path that is not in
the file (``metrics.request_latency.mean`` for ``….successful.mean``), shows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.importers import ImportedResult, parse_results


def _dist(**successful: Any) -> dict[str, Any]:
    """A status distribution; only its successful summary is read."""
    return {"successful": successful, "errored": {"mean": 99.0, "count": 1}}


def _bench(**changes: Any) -> dict[str, Any]:
    bench: dict[str, Any] = {
        "config": {"strategy": {"type_": "concurrent", "streams": 6}},
        "start_time": 100.5, "end_time": 160.5, "duration": 59.5,
        "metrics": {
            "per_modality": {"text": {"mean": 1.0}},
            "request_totals": {"successful": 40, "incomplete": 2, "errored": 3},
            "time_to_first_token_ms": _dist(mean=30.5, median=28.5, std_dev=4.5,
                                            percentiles={"p001": 10.5, "p999": 90.5},
                                            pdf=[1], cumulative_distribution_function=[2]),
            "request_latency": _dist(mean=1.5, percentiles={"p50": 1.25}, mode=1.0),
            "requests_per_second": _dist(mean=0.75),
            "output_tokens_per_second": _dist(mean=48.5),
            "tokens_per_second": _dist(mean=148.5),
            "prompt_token_count": _dist(mean=100.0, total_sum=4000.0),
            "output_token_count": _dist(mean=32.5, total_sum=1300.5),
            "request_concurrency": _dist(mean=5.5, total_sum=11),
        },
    }
    bench.update(changes)
    return bench


def _report(*benches: dict[str, Any], version: Any = "0.5.0") -> dict[str, Any]:
    return {"metadata": {"guidellm_version": version}, "args": {"model": "org/m"},
            "benchmarks": list(benches) or [_bench()]}


def _read(report: dict[str, Any]) -> ImportedResult:
    [r] = parse_results(json.dumps(report), "g.json")
    return r


def _error(report: Any) -> str:
    with pytest.raises(UsageError) as caught:
        parse_results(json.dumps(report), "g.json")
    return str(caught.value)


def test_every_mapped_value_lands_in_its_key() -> None:
    """Latencies (request_latency from seconds), rates, whole token totals, the request
    totals and the strategy's streams, each in its vLLM key."""
    r = _read(_report())
    got = {k: v for k, v in r.model_dump().items() if v is not None and k != "extra"}
    assert got == {
        "source_format": "guidellm-json", "source_version": "0.5.0", "source_file": "g.json",
        "source_index": 0, "model_id": "org/m", "max_concurrency": 6, "duration": 59.5,
        "completed": 40, "failed": 3, "total_input_tokens": 4000,
        "request_throughput": 0.75, "output_throughput": 48.5,
        "total_token_throughput": 148.5, "mean_ttft_ms": 30.5, "median_ttft_ms": 28.5,
        "std_ttft_ms": 4.5, "p0.1_ttft_ms": 10.5, "p99.9_ttft_ms": 90.5,
        "mean_e2el_ms": 1500.0, "p50_e2el_ms": 1250.0}


def test_extra_keeps_the_rest_of_each_summary_and_skips_what_is_no_distribution() -> None:
    """A summary's unmapped fields stay (pdf and CDF dropped); a fractional token total is
    no count; a total_sum of another metric is not a token total; a nested per-modality
    summary is skipped."""
    assert _read(_report()).extra == {
        "strategy": {"type_": "concurrent", "streams": 6}, "incomplete_requests": 2,
        "start_time": 100.5, "end_time": 160.5, "request_latency": {"mode": 1.0},
        "output_token_count": {"mean": 32.5, "total_sum": 1300.5},
        "prompt_token_count": {"mean": 100.0},
        "request_concurrency": {"mean": 5.5, "total_sum": 11}}


def test_a_latency_without_median_std_or_percentiles_has_only_a_mean() -> None:
    bench = _bench()
    bench["metrics"]["request_latency"] = _dist(mean=2.0)
    r = _read(_report(bench))
    assert (r.mean_e2el_ms, r.median_e2el_ms, r.std_e2el_ms, r.percentiles("e2el")) == (
        2000.0, None, None, {})


@pytest.mark.parametrize(("strategy", "concurrency", "rate"), [
    ({"type_": "concurrent"}, None, None), ({"type_": "constant"}, None, None),
    ({"type_": "poisson", "rate": 2.5}, None, 2.5), ({"type_": "constant", "rate": 3}, None, 3.0),
    ({"type_": "synchronous", "streams": 1, "rate": 1}, None, None)])
def test_only_a_concurrent_strategy_s_streams_and_a_rate_strategy_s_rate_are_read(
        strategy: dict[str, Any], concurrency: int | None, rate: float | None) -> None:
    r = _read(_report(_bench(config={"strategy": strategy})))
    assert (r.max_concurrency, r.request_rate) == (concurrency, rate)
    assert r.extra["strategy"] == strategy


def test_start_and_end_times_that_are_not_numbers_are_not_kept() -> None:
    extra = _read(_report(_bench(start_time="x", end_time=None))).extra
    assert "start_time" not in extra and "end_time" not in extra


def test_a_version_that_is_not_text_is_not_a_version() -> None:
    assert _read(_report(version=4)).source_version is None


@pytest.mark.parametrize("benchmarks", [[], [{"duration": 1.0}], [_bench(), 5]])
def test_benchmarks_without_metrics_are_no_guidellm_report(benchmarks: list[Any]) -> None:
    assert "a JSON object of no known format" in _error({"benchmarks": benchmarks})


_B = "benchmarks[1]"
_M = f"{_B}.metrics"


def _bad(metric: str, value: Any) -> dict[str, Any]:
    bench = _bench()
    bench["metrics"][metric] = value
    return bench


@pytest.mark.parametrize(("bench", "message"), [
    (_bad("request_latency", _dist(mean="x")),
     f"{_M}.request_latency.successful.mean: 'x' is not a number"),
    (_bad("request_latency", _dist(mean=1, median="x")),
     f"{_M}.request_latency.successful.median: 'x' is not a number"),
    (_bad("time_to_first_token_ms", _dist(mean=1, std_dev="x")),
     f"{_M}.time_to_first_token_ms.successful.std_dev: 'x' is not a number"),
    (_bad("request_latency", _dist(mean=1, percentiles={"p99": "x"})),
     f"{_M}.request_latency.successful.percentiles.p99: 'x' is not a number"),
    (_bad("request_latency", _dist(mean=1, percentiles=[1])),
     f"{_M}.request_latency.successful.percentiles: expected an object of p001 … p999"),
    (_bad("request_latency", _dist(mean=1, percentiles={"p42": 1})),
     f"{_M}.request_latency.successful.percentiles: unknown percentile 'p42'"),
    (_bad("tokens_per_second", _dist(mean="x")),
     f"{_M}.tokens_per_second.successful.mean: 'x' is not a number"),
    (_bad("request_latency", _dist(median=1)),
     f"{_M}.request_latency.successful: expected a distribution summary (mean, median, "
     "percentiles …)"),
    (_bad("request_latency", {"successful": 1.5}),
     f"{_M}.request_latency.successful: expected a distribution summary (mean, median, "
     "percentiles …)"),
    (_bad("request_totals", {"successful": 1.5}),
     f"{_M}.request_totals.successful: 1.5 is not a whole number"),
    (_bad("request_totals", {"successful": 1, "errored": "x"}),
     f"{_M}.request_totals.errored: 'x' is not a number"),
    (_bad("request_totals", {"successful": 1, "incomplete": True}),
     f"{_M}.request_totals.incomplete: True is not a number"),
    (_bench(duration="long"), f"{_B}.duration: 'long' is not a number"),
    (_bench(config={"strategy": {"type_": "concurrent", "streams": True}}),
     f"{_B}.config.strategy.streams: True is not a number"),
    (_bench(config={"strategy": {"type_": "poisson", "rate": "x"}}),
     f"{_B}.config.strategy.rate: 'x' is not a number"),
    (_bench(config={}, args={"strategy": {"type_": "concurrent", "streams": 2.5}}),
     f"{_B}.args.strategy.streams: 2.5 is not a whole number"),
])
def test_a_bad_value_is_named_by_its_full_path(bench: dict[str, Any], message: str) -> None:
    assert _error(_report(_bench(), bench)) == f"g.json: {message}"


def test_request_totals_of_the_older_layout_are_named_where_they_are() -> None:
    """Older reports hold request_totals beside metrics, not in it."""
    bench = _bench(request_totals={"successful": "x"})
    del bench["metrics"]["request_totals"]
    assert _error(_report(bench)) == (
        "g.json: benchmarks[0].request_totals.successful: 'x' is not a number")
