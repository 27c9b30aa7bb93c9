"""The report's figures, drawn from the run read typed as PNG bytes (embedded in the page, so
it reads offline): the Pareto view and TTFT / TPOT with their spread per concurrency, and
the curves of the SLO searches the run folder keeps (when it keeps any)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from benchlib.report._view import RunView
from benchlib.runs import Measurement

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["pareto_png", "spread_png", "sweep_png"]


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


Points = list[tuple[int, Measurement]]


def _by_scenario(view: RunView) -> dict[str, dict[str, Points]]:
    """scenario → variant → (concurrency, measurement), in order of concurrency."""
    out: dict[str, dict[str, Points]] = {}
    for v, scenario, conc, m in view.measurements():
        out.setdefault(scenario, {}).setdefault(v.label, []).append((conc, m))
    for lines in out.values():
        for points in lines.values():
            points.sort(key=lambda p: p[0])
    return out


def pareto_png(view: RunView) -> bytes | None:
    """Per scenario, per-user tokens/s against total output tokens/s, one line per variant
    along concurrency (up and right is better); None when nothing was measured."""
    from matplotlib.figure import Figure

    data = _by_scenario(view)
    if not data:
        return None
    fig = Figure(figsize=(4.6 * len(data), 3.8), layout="constrained")
    axes = fig.subplots(1, len(data), squeeze=False)[0]
    for ax, (scenario, lines) in zip(axes, data.items(), strict=True):
        for variant, points in lines.items():
            xs = [m.output_throughput for _, m in points]
            ys = [m.per_user_tok_s for _, m in points]
            ax.plot(xs, ys, marker="o", label=variant)
            for (conc, _), x, y in zip(points, xs, ys, strict=True):
                if x is not None and y is not None:
                    ax.annotate(f"c{conc}", (x, y), textcoords="offset points",
                                xytext=(4, 4), fontsize=7)
        ax.set_title(scenario)
        ax.set_xlabel("total output tokens/s")
        ax.set_ylabel("per-user tokens/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _png(fig)


def spread_png(view: RunView) -> bytes | None:
    """TTFT (top) and TPOT (bottom) per concurrency: median as a line with markers, the band
    from p50 to p99 shaded, per variant and scenario; None when nothing was measured."""
    from matplotlib.figure import Figure

    data = _by_scenario(view)
    if not data:
        return None
    fig = Figure(figsize=(4.6 * len(data), 6.4), layout="constrained")
    axes = fig.subplots(2, len(data), squeeze=False)
    for col, (scenario, lines) in enumerate(data.items()):
        for row, (metric, median, p99_of) in enumerate((
                ("ttft", _median_ttft, _p99_ttft), ("tpot", _median_tpot, _p99_tpot))):
            ax = axes[row][col]
            for variant, points in lines.items():
                xs = [c for c, _ in points]
                med = [median(m) for _, m in points]
                p99 = [p99_of(m) for _, m in points]
                (line,) = ax.plot(xs, med, marker="o", label=f"{variant} median")
                if all(v is not None for v in med + p99):
                    ax.fill_between(xs, med, p99, color=line.get_color(), alpha=0.15)
                    ax.plot(xs, p99, linestyle="--", color=line.get_color(), linewidth=0.8,
                            label=f"{variant} p99")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("concurrency")
            ax.set_ylabel(f"{metric.upper()} (ms)")
            ax.set_title(f"{scenario}: {metric.upper()}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    return _png(fig)


def _median_ttft(m: Measurement) -> float | None:
    return m.median_ttft_ms


def _p99_ttft(m: Measurement) -> float | None:
    return m.p99_ttft_ms


def _median_tpot(m: Measurement) -> float | None:
    return m.median_tpot_ms


def _p99_tpot(m: Measurement) -> float | None:
    return m.p99_tpot_ms


def sweep_png(view: RunView) -> bytes | None:
    """The SLO searches' curves (throughput and goodput, each SLO over its limit, the knee
    marked) the run folder keeps; None when it keeps none."""
    from benchlib.sweep import sweep_figure

    return _png(sweep_figure(view.sweeps)) if view.sweeps else None
