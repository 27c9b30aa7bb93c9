"""The measure step's chart: TTFT, TPOT and the throughput-latency trade-off, drawn from its
summary table (:func:`benchlib.runs.summary_table`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchlib.pipeline._chart import Chart

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["measure_figure"]


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
