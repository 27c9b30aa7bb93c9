"""A comparison's headline figure: per scenario, per-user tokens/s against total output
tokens/s, one line per variant along concurrency. The report opens with it and 04_compare
keeps it (``variants.png``); drawn here once, below both, so they are the same figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ParetoData", "pareto_figure"]


#: scenario → variant → (concurrency, total output tok/s, per-user tok/s), by concurrency
ParetoData = Mapping[str, Mapping[str, Sequence[tuple[int, float | None, float | None]]]]


def pareto_figure(data: ParetoData) -> Figure:
    """Per scenario, per-user tokens/s against total output tokens/s, one line per variant
    along concurrency (up and right is better): the report's headline figure, and
    04_compare's (``variants.png``), drawn here once so they are the same."""
    from matplotlib.figure import Figure

    # short: the report's first screen holds the headline table above it (issue 40)
    fig = Figure(figsize=(4.6 * len(data), 3.0), layout="constrained")
    axes = fig.subplots(1, len(data), squeeze=False)[0]
    for ax, (scenario, lines) in zip(axes, data.items(), strict=True):
        for variant, points in lines.items():
            xs = [x for _, x, _ in points]
            ys = [y for _, _, y in points]
            ax.plot(xs, ys, marker="o", label=variant)
            for conc, x, y in points:
                if x is not None and y is not None:
                    ax.annotate(f"c{conc}", (x, y), textcoords="offset points",
                                xytext=(4, 4), fontsize=7)
        ax.set_title(scenario)
        ax.set_xlabel("total output tokens/s")
        ax.set_ylabel("per-user tokens/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig
