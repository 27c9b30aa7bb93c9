"""Whether a comparison's differences are real: each variant's headline figures over the
baseline variant's (the recipe's first), and each speculative speedup, with a bootstrap 95 %
interval (:mod:`benchlib.measure.stats._intervals`) from the per-request records of every repeat
of both measurements. A ratio is called *significant* only when its interval excludes 1; with
one repeat a side's interval comes from its requests alone, and the row says so; a p99 from
fewer than 100 requests is shown as too few, not as a number."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchlib.measure import read_requests, requests_path
from benchlib.measure.stats._intervals import FIGURES, RatioInterval, Repeat, ratio_interval
from benchlib.measure.workload._seeds import bootstrap_seed, derive
from benchlib.recipe import Recipe
from benchlib.runs import STEP_MEASURE, Measurement, MeasureStep, RunFolder

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SIGNIFICANCE_COLUMNS", "add_speedup_intervals", "load_repeats",
           "significance_table", "verdict"]

SIGNIFICANCE_COLUMNS = ["variant", "baseline", "scenario", "concurrency", "figure", "ratio",
                        "low", "high", "verdict", "interval_from", "note"]
#: the speedup's figure: per-user tok/s is 1000 / median TPOT to the first text
_SPEEDUP_FIGURE = "median_tpot_text_ms"


def load_repeats(record: Measurement, folder: Path) -> list[Repeat]:
    """A measurement's repeats (its result JSON's and each later repeat's records), from a
    03_measure measurement whose paths are relative to ``folder`` (the variant's run
    folder) or absolute; empty when its files are gone."""
    first = folder / record.result_json
    later = (record.repeats or [])[1:]
    paths = [first, *(first.with_name(r.result_json) for r in later if r.result_json)]
    throughputs = [record.output_throughput, *(r.output_throughput for r in later)]
    out = []
    for path, tput in zip(paths, throughputs, strict=False):
        jsonl = requests_path(path)
        if jsonl.is_file():
            out.append(Repeat.of(read_requests(jsonl), tput))
    return out


def verdict(r: RatioInterval) -> str:
    """The words a reader acts on."""
    if r.significant is None:
        return "no interval"
    return "significant" if r.significant else "not significant"


def _source(mine: list[Repeat], theirs: list[Repeat]) -> str:
    n = min(len(mine), len(theirs))
    return (f"repeats ({len(mine)} and {len(theirs)})" if n > 1
            else "requests (one repeat: this run's request-to-request spread only)")


def _measured(recipe: Recipe, run_dir: str | Path) -> dict[str, tuple[Path, MeasureStep]]:
    """Per variant: its folder and its 03_measure results (empty where none were saved)."""
    run = RunFolder(path=Path(run_dir))
    return {v.name: (run.variant(v.name).path,
                     run.variant(v.name).result(STEP_MEASURE) or MeasureStep())
            for v in recipe.variants}


def _seed(record: Measurement) -> int:
    """The bootstrap's seed, from the measurement's own."""
    return bootstrap_seed(record.benchlib.seed if record.benchlib else 0)


def significance_table(recipe: Recipe, run_dir: str | Path) -> pd.DataFrame | None:
    """One row per variant (other than the first, the baseline) × scenario × concurrency ×
    headline figure: the ratio variant / baseline, its interval and its verdict. None
    without variants or measurements."""
    import pandas as pd

    if len(recipe.variants) < 2 or not str(run_dir):
        return None
    measured = _measured(recipe, run_dir)
    base = recipe.variants[0].name
    rows: list[dict[str, object]] = []  # the table's rows
    base_folder, base_results = measured[base]
    for variant in recipe.variants[1:]:
        folder, results = measured[variant.name]
        for key, record in results.measurements.items():
            theirs_record = base_results.measurements.get(key)
            if theirs_record is None:
                continue
            mine = load_repeats(record, folder)
            theirs = load_repeats(theirs_record, base_folder)
            if not mine or not theirs:
                continue
            seed = _seed(record)
            for k, figure in enumerate(FIGURES):
                r = ratio_interval(mine, theirs, figure, derive(seed, "ratio", k))
                rows.append({"variant": variant.name, "baseline": base,
                             "scenario": record.scenario,
                             "concurrency": record.concurrency, "figure": figure,
                             "ratio": r.ratio, "low": r.low, "high": r.high,
                             "verdict": verdict(r), "interval_from": _source(mine, theirs),
                             "note": r.note})
    return pd.DataFrame(rows, columns=SIGNIFICANCE_COLUMNS) if rows else None


def add_speedup_intervals(table: pd.DataFrame, recipe: Recipe, run_dir: str | Path) -> None:
    """Each speculative row's speedup (per-user tok/s over its baseline's) gets its 95 %
    interval and verdict: columns ``speedup_low``, ``speedup_high``, ``speedup_verdict``."""
    for column in ("speedup_low", "speedup_high", "speedup_verdict"):
        table[column] = None
    if table.empty or not str(run_dir):
        return
    measured = _measured(recipe, run_dir)
    for i, row in table.iterrows():
        base = row["speedup_over"]
        if not isinstance(base, str):
            continue
        key = MeasureStep.key(str(row["scenario"]), int(row["concurrency"]))
        if str(row["variant"]) not in measured or base not in measured:
            continue
        (folder, results), (base_folder, base_results) = measured[str(row["variant"])], \
            measured[base]
        mine_rec, base_rec = results.measurements.get(key), base_results.measurements.get(key)
        if mine_rec is None or base_rec is None:
            continue
        mine, theirs = load_repeats(mine_rec, folder), load_repeats(base_rec, base_folder)
        if not mine or not theirs:
            continue
        seed = _seed(mine_rec)
        # speed is 1 / time: the speedup is the baseline's TPOT over mine
        r = ratio_interval(mine, theirs, _SPEEDUP_FIGURE, derive(seed, "speedup"), invert=True)
        table.at[i, "speedup_low"] = r.low
        table.at[i, "speedup_high"] = r.high
        table.at[i, "speedup_verdict"] = f"{verdict(r)}, from {_source(mine, theirs)}"
