"""The SLOs a sweep's probe must meet, and each probe's verdict against them.

Two kinds, never mixed up:

* **percentile SLOs** (``--slo ttft_p99_ms=200``): a statistic of one metric over the probe's
  successful requests must not exceed a limit. The key is the result JSON's own key turned
  round (``p99_ttft_ms`` → ``ttft_p99_ms``), so the statistic checked is exactly the one the
  probe's result file holds: ``{metric}_p{P}_ms``, ``{metric}_mean_ms`` or
  ``{metric}_median_ms`` for any metric of :data:`~benchlib.measure.METRICS` (ttft, tpot, itl,
  e2el, ttft_text …). This is benchlib's own criterion.
* **request goodput** (``--goodput ttft:200 tpot:30``): ``vllm bench serve``'s definition,
  unchanged: a request is good when it meets *every* given per-request SLO, and
  ``request_goodput`` = good requests / duration (computed by
  :func:`~benchlib.measure.summarize`). The sweep's criterion on it is the good fraction:
  ``request_goodput × duration / num_prompts`` (failed requests are not good) must reach
  ``min_good_fraction`` (90 % by default: DistServe's "SLO attainment").

Every probe is also checked for failed requests: a load at which requests fail is past the
server's capacity whatever its latencies say.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib._exceptions import UsageError
from benchlib.measure import METRICS, MeasureResult, percentile_key

__all__ = ["Check", "Slo", "evaluate", "parse_slos"]

_KEY = re.compile(r"^(?P<metric>[a-z0-9_]+?)_(?P<stat>p\d+(?:\.\d+)?|mean|median)_ms$")


class Slo(BaseModel):
    """One percentile SLO: ``stat`` of ``metric`` ≤ ``limit_ms``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str = Field(description="a key of benchlib.measure.METRICS (ttft, tpot, e2el …)")
    stat: str = Field(description="p<P> (a percentile), mean or median")
    limit_ms: float = Field(gt=0, description="the most the statistic may be, in ms")

    @property
    def name(self) -> str:
        """The spelling the user wrote: ``ttft_p99_ms``."""
        return f"{self.metric}_{self.stat}_ms"

    @property
    def result_key(self) -> str:
        """The key in the probe's result JSON: ``p99_ttft_ms``, ``mean_ttft_ms``."""
        return f"{self.stat}_{self.metric}_ms"

    @property
    def percentile(self) -> float | None:
        """The percentile the probe must compute (``None``: mean or median, always there)."""
        return float(self.stat[1:]) if self.stat.startswith("p") else None


def parse_slos(items: Iterable[str], flag: str = "--slo") -> tuple[Slo, ...]:
    """``["ttft_p99_ms=200", "tpot_p50_ms=30"]`` → SLOs; a bad item raises
    :class:`~benchlib.UsageError` naming ``flag`` and what is wrong with it."""
    slos: dict[str, Slo] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        match = _KEY.match(key)
        if not sep or match is None:
            raise UsageError(flag, f"{item!r}: expected METRIC_STAT_ms=MS, e.g. "
                             "ttft_p99_ms=200, tpot_p50_ms=30 or e2el_mean_ms=5000")
        metric, stat = match.group("metric"), match.group("stat")
        if metric not in METRICS:
            raise UsageError(flag, f"{item!r}: unknown metric {metric!r}; use one of "
                             + ", ".join(METRICS))
        if stat.startswith("p"):
            p = float(stat[1:])
            if not 0 < p <= 100:
                raise UsageError(flag, f"{item!r}: {p:g} is not a percentile in (0, 100]")
            stat = percentile_key(p)  # p99.0 → p99: the result key's spelling
        try:
            limit = float(raw)
        except ValueError:
            raise UsageError(flag, f"{item!r}: {raw!r} is not a number of ms") from None
        if not limit > 0 or limit == float("inf"):
            raise UsageError(flag, f"{item!r}: the limit must be a finite number of ms > 0")
        slo = Slo(metric=metric, stat=stat, limit_ms=limit)
        if slo.name in slos:
            raise UsageError(flag, f"{slo.name} given twice")
        slos[slo.name] = slo
    return tuple(slos.values())


class Check(BaseModel):
    """One criterion of one probe: its value, its bound, and by how much it missed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="ttft_p99_ms, good_fraction or failed_requests")
    value: float | None = Field(description="what the probe measured (null: not measured)")
    limit: float = Field(description="the bound it is held to")
    bound: Literal["max", "min"] = Field(description="max: value ≤ limit; min: value ≥ limit")
    ok: bool = Field(description="the probe met this criterion")
    excess_pct: float | None = Field(
        description="how far past the limit, in % of it (positive: missed; negative: the "
                    "headroom left); null when not measured or the limit is 0")

    def describe(self) -> str:
        """``ttft_p99_ms 190.2 > 100 (+90 %)``: for the console and the summary."""
        if self.value is None:
            return f"{self.name} not measured"
        ok_sign = "≤" if self.bound == "max" else "≥"
        bad_sign = ">" if self.bound == "max" else "<"
        text = f"{self.name} {_num(self.value)} {ok_sign if self.ok else bad_sign} " \
               f"{_num(self.limit)}"
        if self.excess_pct is not None and not self.ok:
            text += f" ({self.excess_pct:+.0f} %)"
        return text


def _num(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e6:
        return f"{int(x)}"
    return f"{x:.3g}" if abs(x) < 10 else f"{x:,.1f}"


def _check(name: str, value: float | None, limit: float, bound: Literal["max", "min"]
           ) -> Check:
    if value is None:
        return Check(name=name, value=None, limit=limit, bound=bound, ok=False,
                     excess_pct=None)
    ok = value <= limit if bound == "max" else value >= limit
    excess = None
    if limit:
        excess = 100 * (value / limit - 1) if bound == "max" else 100 * (1 - value / limit)
    return Check(name=name, value=value, limit=limit, bound=bound, ok=ok, excess_pct=excess)


def evaluate(result: MeasureResult, slos: Sequence[Slo], goodput: Mapping[str, float],
             min_good_fraction: float) -> list[Check]:
    """Every criterion of ``result`` (a probe): failed requests, each percentile SLO, and the
    good fraction when ``goodput`` SLOs were given."""
    checks = [_check("failed_requests", float(result.failed), 0.0, "max")]
    for slo in slos:
        value = getattr(result, slo.result_key, None)  # a percentile: an extra key
        checks.append(_check(slo.name, None if value is None else float(value),
                             slo.limit_ms, "max"))
    if goodput:
        good = None
        if result.request_goodput is not None and result.num_prompts:
            good = result.request_goodput * result.duration / result.num_prompts
        elif result.completed == 0:
            good = 0.0
        checks.append(_check("good_fraction", good, min_good_fraction, "min"))
    return checks
