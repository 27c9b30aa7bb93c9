"""A comparison run's variants side by side, as seed 003 reports them: startup time, TTFT,
TPOT (the joules per output token beside it, where energy was read), tokens per chunk
against the server's own acceptance, the speedup over the same engine without speculation,
every declared difference as a caveat on every row (and a row's own timing caveats: bursts,
a client that read late); and the Pareto view (total against per-user tokens/s) of all
variants in one chart."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib.pipeline._chart import Chart
from benchlib.recipe import Recipe, assumption_caveats, caveats
from benchlib.runs import (
    STEP_LAUNCH,
    STEP_MEASURE,
    STEP_PLAN,
    MeasureStep,
    RunFolder,
    planned_capacity,
    summary_table,
)
from benchlib.runs._pareto import pareto_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["VARIANT_COLUMNS", "baseline_of", "timing_caveats", "variants_figure", "variants_table",
           "weights_caveat"]

VARIANT_COLUMNS = ["variant", "engine", "speculative", "scenario", "concurrency", "completed",
                   "failed", "startup_s", "median_ttft_ms", "median_tpot_ms",
                   "energy_j_per_output_token", "per_user_tok_s", "output_throughput",
                   "mean_tokens_per_chunk", "server_acceptance_rate",
                   "server_mean_acceptance_length", "spec_reconciled", "speedup",
                   "speedup_over", "planned_kv_tokens", "planned_max_concurrency",
                   "kv_cache_usage_peak", "preemptions", "caveats",
                   "median_ttft_from_schedule_ms"]


def baseline_of(variants: dict[str, Recipe], name: str) -> str | None:
    """The variant a speculating variant's speedup is taken over: the first one with the
    same engine kind and model and speculation off."""
    mine = variants[name]
    if not mine.engine.speculative.on:
        return None
    return next((n for n, r in variants.items() if not r.engine.speculative.on
                 and r.engine.kind == mine.engine.kind and r.model.id == mine.model.id), None)


def timing_caveats(row: Any) -> list[str]:
    """What a row's timing block says about its TTFT and TPOT, as caveats: streams that
    arrived in bursts (then TTFT and TPOT are bounds, not stamps) and a client that read
    late; empty when every stream was read as it arrived."""
    notes = []
    buffered, completed = row.get("buffered_streams"), row.get("completed")
    if buffered:
        notes.append(f"{int(buffered)} of {int(completed or 0)} streams arrived in bursts "
                     "(TTFT, TPOT are bounds)")
    free = row.get("text_free_requests")
    if free:
        notes.append(f"{int(free)} of {int(completed or 0)} streams carried tokens without text "
                     "(the tokenizer renders none of the model's ids): TTFT from the first "
                     "event, as vLLM times it")
    if row.get("client_bound") is True:
        by = row.get("client_bound_by")
        if isinstance(by, str) and by:
            notes.append(f"client_bound (reads lagged > 1 ms and merged events: {by} within "
                         "its bounds)")
        else:  # a result from before the figures were judged: the lag alone
            notes.append("client_bound (reads lagged > 1 ms: the client shared the CPU)")
    return notes


def weights_caveat(recipe: Recipe) -> str:
    """What a variant's weights make of its numbers, when they are not a real model's."""
    return {"dummy": "dummy weights (made by the engine from config.json): memory and "
                     "timings are real; text, acceptance and accuracy are not",
            "random": "random weights: memory and timings are real; text, acceptance and "
                      "accuracy are properties of the weights, not of the engines"
            }.get(recipe.model.weights, "")


def variants_table(recipe: Recipe, run_dir: str | Path) -> pd.DataFrame:
    """One row per variant × scenario × concurrency, read from each variant's folder in
    ``run_dir`` (rows of a variant that has not measured yet are left out)."""
    import pandas as pd

    run = RunFolder(path=Path(run_dir))
    pairs = recipe.variant_recipes()
    notes = caveats(pairs, recipe.compare.differences)
    by_name = dict(pairs)
    rows: list[dict[str, object]] = []  # the table's rows
    timing: list[str] = []  # per row: its timing caveats alone (a missing speedup's reason)
    for name, variant in pairs:
        folder = run.variant(name)
        launch = folder.result(STEP_LAUNCH)
        # the capacity planned for this engine's own settings (never another engine's)
        kv_tokens, max_conc = planned_capacity(folder.result(STEP_PLAN), launch, variant)
        measured = folder.result(STEP_MEASURE) or MeasureStep()
        table = summary_table(measured)
        for _, row in table.iterrows():
            record = measured.measurement(str(row["scenario"]), int(row["concurrency"]))
            spec = record.speculative if record else None
            timing.append("; ".join(timing_caveats(row)))
            synthetic = (["synthetic: benchlib's scripted server answered (canned timings, "
                          "no engine)"] if record and record.synthetic else [])
            rows.append({
                **{k: row.get(k) for k in VARIANT_COLUMNS if k in table.columns},
                "variant": name, "engine": f"{variant.engine.kind} "
                                           f"{variant.engine.version or ''}".strip(),
                "speculative": variant.engine.speculative.label,
                "startup_s": launch.startup_s if launch else None,
                "server_acceptance_rate": spec.acceptance_rate if spec else None,
                "server_mean_acceptance_length": spec.mean_acceptance_length if spec else None,
                "spec_reconciled": spec.reconciled if spec else None,
                "planned_kv_tokens": kv_tokens, "planned_max_concurrency": max_conc,
                "speedup_over": baseline_of(by_name, name),
                "caveats": "; ".join(filter(None, [
                    *synthetic, *notes.get(name, []), weights_caveat(variant), timing[-1],
                    *assumption_caveats(recipe.assumptions, name, str(row["scenario"]))]))})
    table = pd.DataFrame(rows, columns=VARIANT_COLUMNS)
    for i, row in table.iterrows():
        if not isinstance(row["speedup_over"], str):  # no baseline (None: NaN in the frame)
            continue
        base = table[(table["variant"] == row["speedup_over"])
                     & (table["scenario"] == row["scenario"])
                     & (table["concurrency"] == row["concurrency"])]
        b = None if base.empty else base.index[0]
        mine, theirs = _speed(row), None if b is None else _speed(table.loc[b])
        if mine and theirs:
            table.at[i, "speedup"] = mine / theirs
        else:
            why = _no_speedup(row, None if b is None else table.loc[b],
                              (timing[i], "" if b is None else timing[b]))
            table.at[i, "caveats"] = "; ".join(filter(None, [row["caveats"], why]))
    return table


def _no_speedup(row: Any, base: Any, timing: tuple[str, str] = ("", "")) -> str:
    """Why a speculating row has no speedup: no baseline row, or a per-user tok/s (from the
    median TPOT) that was not measured on one side — a TPOT of streams that arrived in one
    read is no speed, and no ratio is made of it. ``timing``: each side's timing caveats."""
    if base is None:
        return f"no speedup: {row['speedup_over']} has no row at this scenario and concurrency"
    sides = [f"{name} ({why or 'no TPOT'})" for name, r, why in (
        (row["variant"], row, timing[0]), (base["variant"], base, timing[1])) if not _speed(r)]
    return f"no speedup: per-user tok/s not measured for {' and '.join(sides)}"


def _speed(row: Any) -> float | None:
    """A row's per-user tok/s, or None where it is missing (None, NaN) or 0."""
    value = row["per_user_tok_s"]
    return float(value) if value is not None and value == value and value else None


def variants_figure(table: pd.DataFrame, save_to: str | Path = "") -> Chart | None:
    """Per scenario, total output tokens/s against per-user tokens/s for every variant
    (points along concurrency; up and right is better): the Pareto view of the
    comparison, the report's headline figure (:func:`~benchlib.runs._pareto.pareto_figure`).
    None when nothing was measured."""
    if table.empty:
        return None
    data: dict[str, dict[str, list[tuple[int, float | None, float | None]]]] = {}
    for _, row in table.sort_values("concurrency", kind="stable").iterrows():
        data.setdefault(str(row["scenario"]), {}).setdefault(str(row["variant"]), []).append(
            (int(row["concurrency"]), _finite(row["output_throughput"]),
             _finite(row["per_user_tok_s"])))
    chart = Chart(pareto_figure(data))
    if save_to:
        chart.save(save_to)
    return chart


def _finite(value: Any) -> float | None:
    """A table's figure, None where it is missing (None, NaN)."""
    return float(value) if value is not None and value == value else None
