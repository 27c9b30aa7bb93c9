"""What speculation needs to pay, as a figure: speedup = τ / r against the tokens per engine
step τ, one line per speculating variant (r: its verify step over its engine's plain step,
:class:`benchlib.measure.SpecCost`), the break-even and a published speedup marked. 04_compare
keeps it (``spec_cost.png``) and the report shows it; drawn here once, below both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchlib.measure import SpecCost

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["spec_cost_figure"]


def spec_cost_figure(rows: Sequence[SpecCost]) -> Figure | None:
    """Speedup against tokens per step for every speculating variant (one line each, its
    first scenario): where a line crosses 1 is its break-even, a published speedup is a star
    at the τ it needs here; the line ends at k + 1 (every draft accepted). None without a
    row."""
    from matplotlib.figure import Figure

    if not rows:
        return None
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.subplots()
    seen: set[str] = set()
    for c in rows:
        if c.variant in seen:
            continue
        seen.add(c.variant)
        taus = [1.0, float(c.k + 1)]
        line = ax.plot(taus, [t / c.cost_ratio for t in taus],
                       label=f"{c.variant} (k={c.k}, r={c.cost_ratio:.2f})")[0]
        if c.breakeven_tokens_per_step is not None:
            ax.plot([c.breakeven_tokens_per_step], [1.0], "o", color=line.get_color())
            ax.annotate(f"break-even τ = {c.breakeven_tokens_per_step:.2f}",
                        (c.breakeven_tokens_per_step, 1.0), textcoords="offset points",
                        xytext=(6, -12), fontsize=8, color=line.get_color())
        for p in c.projections:
            if p.label.startswith("to match"):
                ax.plot([p.tokens_per_step], [p.speedup], "*", color=line.get_color(),
                        markersize=10)
                ax.annotate(f"{p.speedup:.2f}× published: τ = {p.tokens_per_step:.2f}",
                            (p.tokens_per_step, p.speedup), textcoords="offset points",
                            xytext=(6, -12), fontsize=8, color=line.get_color())
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("tokens per engine step τ (1 + accepted drafts)")
    ax.set_ylabel("speedup over the same engine without speculation")
    ax.set_title("What speculation needs to pay here (a projection): speedup = τ / r\n"
                 "r = verify step / plain step; ● break-even, ★ a published speedup",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig
