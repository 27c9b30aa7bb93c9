"""The sweep's curve: throughput and goodput, and each SLO's metric over its limit, along the
load, with the knee marked. One row of two panels per sweep; the same drawing serves
``sweep.png``, 04_compare and the report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from benchlib.sweep._sweep import SweepSummary

__all__ = ["sweep_figure"]


def _mark_knee(ax: Axes, summary: SweepSummary) -> None:
    if summary.knee is not None:
        what = f"{int(summary.knee)}" if summary.mode == "concurrency" else f"{summary.knee:g}"
        ax.axvline(summary.knee, color="tab:green", linestyle="--", linewidth=1.2,
                   label=f"knee {what}" + (" (ceiling)" if summary.ceiling_reached else ""))
    if summary.first_fail is not None:
        ax.axvline(summary.first_fail, color="tab:red", linestyle=":", linewidth=1.0,
                   label="first fail")


def _scale(ax: Axes, loads: Sequence[float]) -> None:
    if loads and max(loads) / min(loads) > 4:
        ax.set_xscale("log", base=2)


def sweep_figure(sweeps: Sequence[tuple[str, SweepSummary]]) -> Figure:
    """The curve of each ``(name, summary)``: left, request throughput and vLLM's
    request_goodput (when goodput SLOs were given) per probe; right, each criterion's value
    over its limit (above 1 misses a maximum, below 1 a minimum). Failing probes are
    crosses, passing ones dots; the knee is the dashed green line."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.8 * max(1, len(sweeps))), layout="constrained")
    axes = fig.subplots(max(1, len(sweeps)), 2, squeeze=False)
    for (name, summary), (left, right) in zip(sweeps, axes, strict=False):
        probes = sorted(summary.probes, key=lambda p: p.load)
        loads = [p.load for p in probes]
        title = f"{name}: " if name else ""
        for key, label in (("request_throughput", "request throughput"),
                           ("request_goodput", "request goodput")):
            ys = [getattr(p, key) for p in probes]
            if all(y is None for y in ys):
                continue
            (line,) = left.plot(loads, [float("nan") if y is None else y for y in ys],
                                label=label)
            for p, y in zip(probes, ys, strict=True):
                if y is not None:
                    left.plot([p.load], [y], marker="o" if p.passed else "x",
                              color=line.get_color(), linestyle="none")
        left.set_ylabel("req/s")
        left.set_title(f"{title}throughput and goodput")
        names = list(dict.fromkeys(c.name for p in probes for c in p.checks
                                   if c.name != "failed_requests"))
        for check_name in names:
            xs, ys, ok = [], [], []
            for p in probes:
                c = next((c for c in p.checks if c.name == check_name), None)
                if c is None or c.value is None or not c.limit:
                    continue
                xs.append(p.load)
                ys.append(c.value / c.limit)
                ok.append(c.ok)
            (line,) = right.plot(xs, ys, label=check_name)
            for x, y, good in zip(xs, ys, ok, strict=True):
                right.plot([x], [y], marker="o" if good else "x", color=line.get_color(),
                           linestyle="none")
        right.axhline(1.0, color="black", linewidth=0.8)
        right.set_ylabel("value / limit")
        right.set_title(f"{title}SLOs (1 = the limit)")
        for ax in (left, right):
            _mark_knee(ax, summary)
            _scale(ax, loads)
            ax.set_xlabel(summary.unit())
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    return fig
