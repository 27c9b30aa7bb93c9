"""SLO specs: the spelling, every bad one named, and a probe's verdict against a result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.measure import MeasureResult
from benchlib.sweep import evaluate, parse_slos

GOLDEN = Path(__file__).parents[1] / "measure" / "golden" / "head.json"


def _result() -> MeasureResult:
    """4 requests, 2 failed, 60 ms; vLLM goodput SLOs ttft 15, e2el 100 → 1 good."""
    return MeasureResult.model_validate(json.loads(GOLDEN.read_text())["queued"]["result"])


def test_the_result_key_turned_round() -> None:
    slos = parse_slos(["ttft_p99_ms=200", "tpot_median_ms=30", "itl_text_only_p99.9_ms=5",
                       "e2el_p99.0_ms=1e4"])
    assert [s.name for s in slos] == ["ttft_p99_ms", "tpot_median_ms",
                                      "itl_text_only_p99.9_ms", "e2el_p99_ms"]
    assert [s.result_key for s in slos] == ["p99_ttft_ms", "median_tpot_ms",
                                            "p99.9_itl_text_only_ms", "p99_e2el_ms"]
    assert [s.percentile for s in slos] == [99.0, None, 99.9, 99.0]
    assert slos[3].limit_ms == 10_000


@pytest.mark.parametrize("spec,says", [
    ("ttft_p99=200", "expected METRIC_STAT_ms=MS"),
    ("ttft_p99_ms", "expected METRIC_STAT_ms=MS"),
    ("latency_p99_ms=5", "unknown metric 'latency'"),
    ("ttft_p0_ms=5", "not a percentile"),
    ("ttft_p101_ms=5", "not a percentile"),
    ("ttft_p99_ms=fast", "'fast' is not a number"),
    ("ttft_p99_ms=0", "must be a finite number of ms > 0"),
    ("ttft_p99_ms=inf", "must be a finite number of ms > 0"),
])
def test_a_bad_spec_names_the_flag_and_the_problem(spec: str, says: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_slos([spec])
    assert info.value.field == "--slo" and says in info.value.message
    assert info.value.exit_code == 2


def test_the_same_slo_twice_is_refused() -> None:
    with pytest.raises(UsageError, match="given twice"):
        parse_slos(["ttft_p99_ms=1", "ttft_p99.0_ms=2"])


def test_a_probe_is_judged_on_every_criterion() -> None:
    result = _result()
    slos = parse_slos(["ttft_p99.9_ms=25", "e2el_mean_ms=20"])
    checks = {c.name: c for c in evaluate(result, slos, {"ttft": 15.0, "e2el": 100.0}, 0.9)}
    assert list(checks) == ["failed_requests", "ttft_p99.9_ms", "e2el_mean_ms",
                            "good_fraction"]
    assert not checks["failed_requests"].ok and checks["failed_requests"].value == 2
    ttft = checks["ttft_p99.9_ms"]
    assert ttft.ok and ttft.value == pytest.approx(19.982) and ttft.excess_pct is not None
    assert ttft.excess_pct < 0  # the headroom
    e2el = checks["e2el_mean_ms"]
    assert not e2el.ok and e2el.excess_pct == pytest.approx(47.5)
    assert e2el.describe() == "e2el_mean_ms 29.5 > 20 (+48 %)"
    # vLLM's goodput: 1 of the 4 requests met both SLOs
    good = checks["good_fraction"]
    assert good.value == pytest.approx(0.25) and not good.ok and good.bound == "min"
    assert good.describe() == "good_fraction 0.25 < 0.9 (+72 %)"


def test_no_goodput_slos_no_good_fraction() -> None:
    checks = evaluate(_result(), parse_slos(["ttft_p50_ms=100"]), {}, 0.9)
    assert [c.name for c in checks] == ["failed_requests", "ttft_p50_ms"]


def test_a_statistic_the_probe_did_not_compute_fails_as_not_measured() -> None:
    checks = evaluate(_result(), parse_slos(["ttft_p90_ms=100"]), {}, 0.9)
    assert not checks[1].ok and checks[1].value is None
    assert checks[1].describe() == "ttft_p90_ms not measured"
