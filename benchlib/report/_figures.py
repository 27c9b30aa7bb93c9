"""The report's figures, drawn from the report context as PNG bytes (embedded in the page, so
it reads offline): the Pareto view and TTFT / TPOT with their spread per concurrency, and
the curves of the SLO searches the run folder keeps (when it keeps any)."""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchlib.sweep import SweepSummary

__all__ = ["measurements", "pareto_png", "spread_png", "sweep_png", "sweeps_of"]


def measurements(context: Mapping[str, Any]) -> Iterator[tuple[str, str, int, dict[str, Any]]]:
    """``(variant, scenario, concurrency, figures)`` of every measurement, in order (variants
    by their own names, not their ``_`` aliases)."""
    variants = context.get("variants") or {}
    names = [v["name"] for v in (context.get("recipe") or {}).get("variants") or []] or [""]
    for name in names:
        for scenario, by_c in (variants.get(name) or {}).items():
            if not isinstance(by_c, Mapping) or not any(k.startswith("c") and k[1:].isdigit()
                                                        for k in by_c):
                continue
            for key, figures in sorted(by_c.items(), key=lambda kv: int(kv[0][1:])):
                yield name, str(scenario), int(key[1:]), dict(figures)


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def _by_scenario(context: Mapping[str, Any]) -> dict[str, dict[str, list[tuple[int, dict[str,
                                                                                      Any]]]]]:
    out: dict[str, dict[str, list[tuple[int, dict[str, Any]]]]] = {}
    for variant, scenario, conc, figures in measurements(context):
        out.setdefault(scenario, {}).setdefault(variant or "run", []).append((conc, figures))
    return out


def pareto_png(context: Mapping[str, Any]) -> bytes | None:
    """Per scenario, per-user tokens/s against total output tokens/s, one line per variant
    along concurrency (up and right is better); None when nothing was measured."""
    from matplotlib.figure import Figure

    data = _by_scenario(context)
    if not data:
        return None
    fig = Figure(figsize=(4.6 * len(data), 3.8), layout="constrained")
    axes = fig.subplots(1, len(data), squeeze=False)[0]
    for ax, (scenario, lines) in zip(axes, data.items(), strict=True):
        for variant, points in lines.items():
            xs = [f.get("output_throughput") for _, f in points]
            ys = [f.get("per_user_tok_s") for _, f in points]
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


def spread_png(context: Mapping[str, Any]) -> bytes | None:
    """TTFT (top) and TPOT (bottom) per concurrency: median as a line with markers, the band
    from p50 to p99 shaded, per variant and scenario; None when nothing was measured."""
    from matplotlib.figure import Figure

    data = _by_scenario(context)
    if not data:
        return None
    fig = Figure(figsize=(4.6 * len(data), 6.4), layout="constrained")
    axes = fig.subplots(2, len(data), squeeze=False)
    for col, (scenario, lines) in enumerate(data.items()):
        for row, metric in enumerate(("ttft", "tpot")):
            ax = axes[row][col]
            for variant, points in lines.items():
                xs = [c for c, _ in points]
                med = [f.get(f"median_{metric}_ms") for _, f in points]
                p99 = [f.get(f"p99_{metric}_ms") for _, f in points]
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


def sweeps_of(context: Mapping[str, Any]) -> list[tuple[str, SweepSummary]]:
    """The SLO searches of ``context["sweeps"]`` by their own names (not their ``_``
    aliases, which are the same objects)."""
    from benchlib.sweep import SweepSummary

    seen: set[int] = set()
    out: list[tuple[str, SweepSummary]] = []
    for name, data in (context.get("sweeps") or {}).items():
        if id(data) not in seen:
            seen.add(id(data))
            out.append((name, SweepSummary.model_validate(data)))
    return out


def sweep_png(context: Mapping[str, Any]) -> bytes | None:
    """The SLO searches' curves (throughput and goodput, each SLO over its limit, the knee
    marked) of ``context["sweeps"]``; None when the run folder keeps none."""
    from benchlib.sweep import sweep_figure

    found = sweeps_of(context)
    return _png(sweep_figure(found)) if found else None
