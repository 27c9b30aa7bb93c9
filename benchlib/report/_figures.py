"""The report's figures, drawn from the run read typed as PNG bytes (embedded in the page, so
it reads offline): the Pareto view and TTFT / TPOT with their spread per concurrency, what
speculation needs to pay, and the curves of the SLO searches the run folder keeps (when it
keeps any)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from benchlib.report._view import RunView
from benchlib.runs import Measurement
from benchlib.runs._pareto import pareto_figure
from benchlib.runs._spec_cost_figure import spec_cost_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["pareto_png", "spec_cost_png", "spread_png", "sweep_png"]


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
    """:func:`~benchlib.runs._pareto.pareto_figure` of the run's measurements;
    None when nothing was measured."""
    data = {scenario: {variant: [(conc, m.output_throughput, m.per_user_tok_s)
                                 for conc, m in points] for variant, points in lines.items()}
            for scenario, lines in _by_scenario(view).items()}
    return _png(pareto_figure(data)) if data else None


def spec_cost_png(view: RunView) -> bytes | None:
    """:func:`~benchlib.runs._spec_cost_figure.spec_cost_figure` of 04_compare's
    speculation costs; None when the run has none."""
    fig = spec_cost_figure(view.compare.spec_cost) if view.compare else None
    return _png(fig) if fig is not None else None


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
