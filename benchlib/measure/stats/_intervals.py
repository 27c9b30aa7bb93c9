"""Bootstrap 95 % intervals for a measurement's headline figures, and for the ratio of two
measurements' figures (a variant over its baseline, a speculative speedup).

The figures: median and p99 of vLLM's TTFT, TPOT and ITL and of benchlib's TTFT to the first
text (a chat stream's role-only first chunk starts vLLM's), benchlib's median TPOT from the
first text (the speedup's per-user speed), and output throughput. Each comes from the per-request
records (``.requests.jsonl``) of every repeat of the measurement:

* with two or more repeats, a two-level (cluster) bootstrap: each resample draws the repeats
  with replacement, then each drawn repeat's requests with replacement, and computes the
  figure over the pooled requests (ITL: a drawn request brings all its gaps, which are not
  independent of one another). The interval then covers both run-to-run and
  request-to-request variation; its ``source`` is ``repeats``. Output throughput, one number
  per repeat, is the mean of the drawn repeats' throughputs, and gets an interval only from
  :data:`MIN_THROUGHPUT_REPEATS` repeats: a percentile bootstrap of a handful of numbers is
  too narrow (with 3 repeats a side, the chance ordering of six equal runs alone puts every
  resample on one side of 1 about one time in ten);
* with one repeat, only the requests are drawn: the interval says how well this run's
  requests pin the figure down, not how another run would come out. Its ``source`` is
  ``requests`` (shown as such); output throughput, one number per run, gets no interval.

Percentile bootstrap over :data:`RESAMPLES` resamples from a generator seeded by the run's
one rule (:func:`benchlib.measure.workload._seeds.derive` with ``"bootstrap"``), so the same records
give the same intervals. A ratio's interval comes from the two sides' resamples drawn
independently, resample by resample; it is *significant* only when it excludes 1.

A percentile ``p`` is read from too few requests when fewer than ``100 / (100 − p)`` requests
succeeded (p99: 100; there is then not one request above it): such a figure is not given as a
number (``value`` null, ``note`` says why), nor is its interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from benchlib.measure.results._records import RequestRecord

__all__ = ["CONFIDENCE", "FIGURES", "MIN_THROUGHPUT_REPEATS", "RESAMPLES", "Interval",
           "Intervals", "RatioInterval", "Repeat", "bootstrap", "intervals_of", "min_requests",
           "ratio_interval"]

#: resamples per interval (percentile bootstrap)
RESAMPLES = 2000
#: the intervals' coverage
CONFIDENCE = 0.95
#: repeats (each side) before output throughput, one number per repeat, gets an interval
MIN_THROUGHPUT_REPEATS = 5

_Metric = Literal["ttft", "ttft_text", "tpot", "tpot_text", "itl"]
#: figure → (metric, percentile); output_throughput is per repeat
FIGURES: dict[str, tuple[_Metric | None, float | None]] = {
    "median_ttft_ms": ("ttft", 50.0), "p99_ttft_ms": ("ttft", 99.0),
    "median_tpot_ms": ("tpot", 50.0), "p99_tpot_ms": ("tpot", 99.0),
    "median_itl_ms": ("itl", 50.0), "p99_itl_ms": ("itl", 99.0),
    "median_ttft_text_ms": ("ttft_text", 50.0), "p99_ttft_text_ms": ("ttft_text", 99.0),
    "median_tpot_text_ms": ("tpot_text", 50.0),
    "output_throughput": (None, None),
}


def min_requests(p: float) -> int:
    """Successful requests a ``p``-th percentile needs to be a number: at least one request
    above it, ``⌈100 / (100 − p)⌉`` (p99: 100, p90: 10, the median: 2)."""
    return 1 if p >= 100 else math.ceil(100 / (100 - p) - 1e-9)


@dataclass(frozen=True)
class Repeat:
    """One repeat's per-request values (successful requests only) and its throughput."""

    ttft: np.ndarray
    ttft_text: np.ndarray
    tpot: np.ndarray
    tpot_text: np.ndarray
    #: per request, its vLLM ITL gaps
    itl: list[np.ndarray]
    output_throughput: float | None

    @classmethod
    def of(cls, records: Sequence[RequestRecord], output_throughput: float | None) -> Repeat:
        """A repeat from its records (vLLM's TPOT: (E2EL − TTFT) / (N − 1) from the first
        choices event; benchlib's from the first text, as the record has it)."""
        ok = [r for r in records if r.success]
        tpot = [(r.e2el_ms - r.ttft_first_choice_ms) / (r.output_tokens - 1) for r in ok
                if r.output_tokens and r.output_tokens > 1 and r.e2el_ms is not None
                and r.ttft_first_choice_ms is not None]
        return cls(ttft=np.array([r.ttft_first_choice_ms for r in ok
                                  if r.ttft_first_choice_ms is not None], dtype=np.float64),
                   ttft_text=np.array([r.ttft_ms for r in ok if r.ttft_ms is not None],
                                      dtype=np.float64),
                   tpot=np.array(tpot, dtype=np.float64),
                   tpot_text=np.array([r.tpot_ms for r in ok if r.tpot_ms is not None],
                                      dtype=np.float64),
                   itl=[np.array(r.itl_ms, dtype=np.float64) for r in ok],
                   output_throughput=output_throughput)

    @property
    def requests(self) -> int:
        return len(self.itl)

    def values(self, metric: _Metric) -> np.ndarray:
        if metric == "itl":
            return np.concatenate(self.itl) if self.itl else np.empty(0)
        arr: np.ndarray = getattr(self, metric)
        return arr

    def drawn(self, metric: _Metric, rng: np.random.Generator) -> np.ndarray:
        """This repeat's values of ``metric`` with its requests drawn with replacement."""
        if metric == "itl":
            if not self.itl:
                return np.empty(0)
            picks = rng.integers(0, len(self.itl), len(self.itl))
            return np.concatenate([self.itl[k] for k in picks])
        arr = self.values(metric)
        return arr[rng.integers(0, arr.size, arr.size)] if arr.size else arr


#: elements a block of resamples may gather at once (a bound on the bootstrap's memory: 32 MB)
_BLOCK_ELEMENTS = 4_000_000
#: padded cells per value above which the units are too ragged to pad (ITL of requests whose
#: output lengths differ widely): resampled one at a time instead
_MOST_PADDING = 4.0


def _units(repeats: Sequence[Repeat], metric: _Metric) -> list[list[np.ndarray]]:
    """Each repeat's units of resampling: a request's one value, or (ITL) all its gaps."""
    return [r.itl if metric == "itl" else list(r.values(metric)[:, None]) for r in repeats]


def _padded(per: list[list[np.ndarray]], most: int, width: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """The units as one NaN-padded array (repeat, ``most`` units, ``width`` values), and each
    repeat's count of units."""
    counts = np.array([len(u) for u in per], dtype=np.int64)
    padded = np.full((len(per), most, width), np.nan)
    for i, units in enumerate(per):
        for j, arr in enumerate(units):
            padded[i, j, :arr.size] = arr
    return padded, counts


def _row_percentiles(rows: np.ndarray, p: float) -> np.ndarray:
    """The ``p``-th percentile of each row's values, NaN left out (numpy's linear method;
    NaN for a row without one): rows sorted, NaN last, read at (count − 1) · p / 100.
    (``np.nanpercentile`` along an axis loops over the rows: 72 ms against 2.5 ms for 2,000
    rows of 40.)"""
    ordered = np.sort(rows, axis=1)
    count = (~np.isnan(ordered)).sum(axis=1)
    h = (count - 1) * p / 100.0
    lo = np.clip(np.floor(h).astype(np.int64), 0, None)
    hi = np.clip(np.minimum(lo + 1, count - 1), 0, None)
    at = np.arange(rows.shape[0])
    a, b = ordered[at, lo], ordered[at, hi]
    out: np.ndarray = a + (h - lo) * (b - a)  # a row without a value is all NaN: so is this
    return out


def _one_at_a_time(repeats: Sequence[Repeat], metric: _Metric, p: float,
                   rng: np.random.Generator, resamples: int) -> np.ndarray:
    """The bootstrap resample by resample, gathering only real values (no padding): for
    units too ragged or too many to pad (see :func:`bootstrap`)."""
    out = np.full(resamples, np.nan)
    n = len(repeats)
    for b in range(resamples):
        pooled = np.concatenate([repeats[k].drawn(metric, rng) for k in rng.integers(0, n, n)])
        if pooled.size:
            out[b] = float(np.percentile(pooled, p))
    return out


def bootstrap(repeats: Sequence[Repeat], figure: str, rng: np.random.Generator,
              resamples: int = RESAMPLES, block_elements: int = _BLOCK_ELEMENTS
              ) -> np.ndarray:
    """``resamples`` bootstrap values of ``figure`` (NaN where a resample has no value): each
    resample draws the repeats (one repeat: always itself), then each drawn repeat's units.
    Drawn at once for a block of resamples where the units pad into an array of at most
    ``block_elements`` a resample with little padding (2,000 resamples of a small run took a
    second one at a time, in a Python loop); else one resample at a time, as many values as
    it draws (a large or ragged ITL: 10,000 requests' gaps padded to the longest)."""
    metric, p = FIGURES[figure]
    n = len(repeats)
    if metric is None:
        tput = np.array([np.nan if r.output_throughput is None else r.output_throughput
                         for r in repeats])
        if n < MIN_THROUGHPUT_REPEATS or np.isnan(tput).all():
            return np.full(resamples, np.nan)
        drawn = tput[rng.integers(0, n, (resamples, n))]
        have = (~np.isnan(drawn)).sum(axis=1)
        means: np.ndarray = np.where(have > 0, np.nansum(drawn, axis=1) / np.maximum(have, 1),
                                     np.nan)
        return means
    assert p is not None
    per = _units(repeats, metric)
    values = sum(a.size for units in per for a in units)
    out = np.full(resamples, np.nan)
    if not values:  # not one value to draw
        return out
    most = max(len(units) for units in per)
    width = max(a.size for units in per for a in units)
    row = n * most * width  # padded cells a resample gathers
    if row > block_elements or row > _MOST_PADDING * values:  # a resample draws ~values
        return _one_at_a_time(repeats, metric, p, rng, resamples)
    padded, counts = _padded(per, most, width)
    block = block_elements // row
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        which = rng.integers(0, n, (rows, n))
        have = counts[which][..., None]                       # (rows, n, 1) units each
        units = np.floor(rng.random((rows, n, most)) * have).astype(np.int64)
        gathered = padded[which[..., None], units]            # (rows, n, most, width)
        gathered[np.arange(most)[None, None, :] >= have] = np.nan  # past a repeat's units
        out[start:start + rows] = _row_percentiles(gathered.reshape(rows, -1), p)
    return out


def _bounds(draws: np.ndarray) -> tuple[float, float] | None:
    finite = draws[np.isfinite(draws)]
    if finite.size < 0.9 * draws.size:  # most resamples without a value: no interval
        return None
    tail = (1 - CONFIDENCE) / 2 * 100
    lo, hi = np.percentile(finite, [tail, 100 - tail])
    return float(lo), float(hi)


class Interval(BaseModel):
    """A figure's point value and bootstrap interval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float | None = Field(description="the figure over every repeat's successful "
                                            "requests pooled (null: too few, see note)")
    low: float | None = Field(description="lower end of the 95 % interval (null: none)")
    high: float | None = Field(description="upper end of the 95 % interval (null: none)")
    requests: int = Field(description="successful requests behind it, all repeats")
    note: str = Field("", description="why a value or interval is missing, in words")


class Intervals(BaseModel):
    """A measurement's headline figures with their intervals, and how they were drawn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["repeats", "requests"] = Field(
        description="repeats: repeats and their requests resampled (covers run-to-run "
                    "variation); requests: one run, its requests resampled (how well this "
                    "run pins the figure down, not how another run would come out)")
    repeats: int = Field(description="repeats of the measurement")
    confidence: float = Field(CONFIDENCE, description="the intervals' coverage")
    resamples: int = Field(RESAMPLES, description="bootstrap resamples per interval")
    seed: int = Field(description="seed of the resampling (derive(seed, 'bootstrap'))")
    figures: dict[str, Interval] = Field(description="figure (a key of FIGURES) → interval")


_FEW_RUNS = (f"throughput is one number per run: an interval needs repeats ≥ "
             f"{MIN_THROUGHPUT_REPEATS}")


def _too_few(figure: str, requests: int) -> str:
    _, p = FIGURES[figure]
    if p is not None and requests < min_requests(p):
        return (f"too few requests for a p{p:g}: {requests} < {min_requests(p)} "
                "(not one request above it)")
    return ""


def _point(repeats: Sequence[Repeat], figure: str) -> float | None:
    metric, p = FIGURES[figure]
    if metric is None:
        tput = [r.output_throughput for r in repeats if r.output_throughput is not None]
        return float(np.mean(tput)) if tput else None
    pooled = np.concatenate([r.values(metric) for r in repeats])
    return float(np.percentile(pooled, p)) if pooled.size and p is not None else None


def intervals_of(repeats: Sequence[Repeat], seed: int,
                 resamples: int = RESAMPLES) -> Intervals:
    """Every figure of :data:`FIGURES` with its interval (see the module's doc)."""
    rng = np.random.default_rng(seed)
    requests = sum(r.requests for r in repeats)
    figures: dict[str, Interval] = {}
    for figure, (metric, _) in FIGURES.items():
        note = _too_few(figure, requests)
        if note:
            figures[figure] = Interval(value=None, low=None, high=None, requests=requests,
                                       note=note)
            continue
        value = _point(repeats, figure)
        bounds = _bounds(bootstrap(repeats, figure, rng, resamples)) if value is not None \
            else None
        if metric is None and len(repeats) < MIN_THROUGHPUT_REPEATS:
            note = _FEW_RUNS
        elif bounds is None:
            note = "no interval: too few requests with this figure"
        figures[figure] = Interval(value=value, low=bounds[0] if bounds else None,
                                   high=bounds[1] if bounds else None, requests=requests,
                                   note=note)
    return Intervals(source="repeats" if len(repeats) > 1 else "requests",
                     repeats=len(repeats), seed=seed, resamples=resamples, figures=figures)


class RatioInterval(BaseModel):
    """One figure of a measurement over the same figure of another, with its interval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ratio: float | None = Field(description="mine / theirs (null: a side has no value)")
    low: float | None = Field(description="lower end of the 95 % interval")
    high: float | None = Field(description="upper end of the 95 % interval")
    significant: bool | None = Field(
        description="the interval excludes 1 (null: no interval, see note)")
    note: str = Field("", description="why there is no ratio or interval")


def ratio_interval(mine: Sequence[Repeat], theirs: Sequence[Repeat], figure: str, seed: int,
                   invert: bool = False, resamples: int = RESAMPLES) -> RatioInterval:
    """``figure`` of ``mine`` over ``theirs`` (``invert``: theirs over mine, as a speedup is
    of a time), each side resampled as :func:`intervals_of` does, independently."""
    a_req = sum(r.requests for r in mine)
    b_req = sum(r.requests for r in theirs)
    note = _too_few(figure, min(a_req, b_req))
    a, b = _point(mine, figure), _point(theirs, figure)
    if note or not a or not b:  # None or zero: no ratio
        return RatioInterval(ratio=None, low=None, high=None, significant=None,
                             note=note or "a side has no value")
    rng = np.random.default_rng(seed)
    da, db = bootstrap(mine, figure, rng, resamples), bootstrap(theirs, figure, rng, resamples)
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = (db / da) if invert else (da / db)
    ratio = b / a if invert else a / b
    bounds = _bounds(draws)
    if bounds is None:
        why = _FEW_RUNS if FIGURES[figure][0] is None else "no interval: too few values"
        return RatioInterval(ratio=ratio, low=None, high=None, significant=None, note=why)
    return RatioInterval(ratio=ratio, low=bounds[0], high=bounds[1],
                         significant=not bounds[0] <= 1.0 <= bounds[1])
