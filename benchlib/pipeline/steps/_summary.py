"""A measure step's results read as people read them: one row per scenario × concurrency
(joules per output token beside TPOT, the watts after the engine's own figures), and the
chart of TTFT, TPOT and the throughput-latency trade-off."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib.pipeline._chart import Chart

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ENERGY_FIGURES", "TABLE_COLUMNS", "measure_figure", "measurements",
           "summary_table"]

TABLE_COLUMNS = ["scenario", "endpoint", "input_len", "output_len", "concurrency", "completed",
                 "failed", "median_ttft_ms", "median_ttft_text_ms", "p99_ttft_ms",
                 "median_tpot_ms", "p99_tpot_ms", "energy_j_per_output_token",
                 "median_itl_ms", "median_e2el_ms", "output_throughput", "per_user_tok_s",
                 "mean_tokens_per_chunk", "server_acceptance_length", "kv_cache_usage_peak",
                 "kv_cache_usage_expected", "requests_waiting_peak", "preemptions",
                 "avg_power_w", "peak_power_w", "idle_power_w",
                 "buffered_streams", "text_free_requests", "exact_ttft_fraction",
                 "client_bound", "client_bound_by",
                 "sdk_median_ttft_ms", "sdk_median_tpot_ms",
                 # a paced load: TTFT from the schedule's due time (client queueing included)
                 "median_ttft_from_schedule_ms"]
#: the figures of a measurement's ``energy`` block (benchlib.energy.EnergyResult) that its
#: record also carries at the top, for the table, the report and the write-up to cite
ENERGY_FIGURES = ("energy_j", "energy_j_per_output_token",
                  "energy_above_idle_j_per_output_token", "energy_j_per_request",
                  "avg_power_w", "peak_power_w", "idle_power_w", "energy_includes_idle")


def _worst_figure(figures: Any) -> str | None:
    """``"median_ttft_ms ±3.4%"``: of a client-bound run's figures, the one its merged reads
    could move most, with the share (None when the run is not client-bound)."""
    if not isinstance(figures, dict) or not figures:
        return None
    worst, share = max(figures.items(), key=lambda kv: float(kv[1]))
    return f"{worst} ±{float(share):.1%}"


def summary_table(results: Mapping[str, Any]) -> pd.DataFrame:
    """One row per scenario × concurrency from a measure step's results."""
    import pandas as pd

    rows = []
    for key, r in results.items():
        if "/c" not in key or not isinstance(r, dict):
            continue  # ramps, engine_lost, engine_exit: not concurrency results
        # per user: decode speed after the first text (vLLM's TPOT starts at a role chunk)
        tpot = r.get("median_tpot_text_ms") or r.get("median_tpot_ms") or 0.0
        timing = r.get("timing") or {}
        server = r.get("server_metrics") or {}  # the engine's /metrics (none: not sampled)
        spec = r.get("speculative") or {}
        energy = r.get("energy") or {}  # null figures: not measured (energy.reason says why)
        rows.append({**{k: r.get(k) for k in TABLE_COLUMNS},
                     **{k: energy.get(k) for k in ENERGY_FIGURES if k in TABLE_COLUMNS},
                     **{k: server.get(k) for k in ("kv_cache_usage_peak",
                                                   "requests_waiting_peak", "preemptions")},
                     # the plan's expectation of that peak (02_launch's plan vs the engine)
                     "kv_cache_usage_expected": (r.get("kv_usage_vs_plan") or {}).get(
                         "expected"),
                     "server_acceptance_length": spec.get("mean_acceptance_length"),
                     # how far the row can be trusted (see the measure result's timing block)
                     "exact_ttft_fraction": timing.get("exact_ttft_fraction"),
                     "client_bound": timing.get("client_bound"),
                     # the figure the late reads could move most, by how much
                     "client_bound_by": _worst_figure(timing.get("client_bound_figures")),
                     "endpoint": r.get("endpoint_type"),
                     "per_user_tok_s": 1000.0 / tpot if tpot else None,
                     # what the openai SDK saw (scenario sdk_view), beside the wire's
                     "sdk_median_ttft_ms": (r.get("sdk") or {}).get("median_ttft_ms"),
                     "sdk_median_tpot_ms": (r.get("sdk") or {}).get("median_tpot_ms")})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def measurements(results: Mapping[str, Any]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Each measurement of a measure step's results, in :func:`summary_table`'s order:
    (scenario, concurrency, its whole result record with ``per_user_tok_s`` and the
    :data:`ENERGY_FIGURES` added)."""
    for _, row in summary_table(results).iterrows():
        record = dict(results.get(f"{row['scenario']}/c{row['concurrency']}", {}))
        record["per_user_tok_s"] = row["per_user_tok_s"]
        energy = record.get("energy") or {}
        record.update({k: energy.get(k) for k in ENERGY_FIGURES})
        yield str(row["scenario"]), int(row["concurrency"]), record


def measure_figure(table: pd.DataFrame, save_to: str | Path = "") -> Chart:
    """TTFT and TPOT against concurrency per scenario, and per-user against total tokens/s
    (the throughput-latency trade-off people read first); saved as PNG when ``save_to``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 4), layout="constrained")
    ax_ttft, ax_tpot, ax_tradeoff = fig.subplots(1, 3)
    for name, group in table.groupby("scenario", sort=False):
        g = group.sort_values("concurrency")
        ax_ttft.plot(g["concurrency"], g["median_ttft_ms"], marker="o", label=str(name))
        ax_tpot.plot(g["concurrency"], g["median_tpot_ms"], marker="o", label=str(name))
        ax_tradeoff.plot(g["output_throughput"], g["per_user_tok_s"], marker="o",
                         label=str(name))
        for _, row in g.iterrows():
            ax_tradeoff.annotate(f"c{row['concurrency']}",
                                 (row["output_throughput"], row["per_user_tok_s"]),
                                 textcoords="offset points", xytext=(4, 4), fontsize=8)
    for ax in (ax_ttft, ax_tpot):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrency")
    ax_ttft.set_ylabel("median TTFT (ms)")
    ax_tpot.set_ylabel("median TPOT (ms)")
    ax_tradeoff.set_xlabel("total output tokens/s")
    ax_tradeoff.set_ylabel("per-user tokens/s (1000 / median TPOT)")
    return Chart.finish(fig, (ax_ttft, ax_tpot, ax_tradeoff), save_to)
