"""Charts for the ``00_plan`` notebook: the memory stack per GPU and capacity vs context.

``plan_figures(plan)`` is the one call the notebook makes; matplotlib is imported here, not at
package import, so the CLI and the tests that do not draw never need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlib.memory._plan import Plan, sweep_max_model_len

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plan_figures"]

_LENGTHS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576)


def _stack(p: Plan) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4.5), layout="constrained")
    ax = fig.add_subplot()
    weights = p.weights.per_gpu_gib
    overhead = p.overhead.total_gib if p.config.kv_budget_gib is None else 0.0
    kv = max(0.0, p.kv_budget_gib or 0.0)
    parts = [("weights", weights, "#4c72b0"), ("overhead", overhead, "#dd8452"),
             ("KV cache", kv, "#55a868")]
    bottom = 0.0
    for label, value, color in parts:
        ax.bar([0], [value], bottom=bottom, color=color, label=f"{label} {value:.1f} GiB")
        bottom += value
    if p.memory_gib:
        ax.axhline(p.memory_gib, color="black", lw=1, ls="--",
                   label=f"GPU memory {p.memory_gib:.1f} GiB")
        if p.usable_gib:
            ax.axhline(p.usable_gib, color="grey", lw=1, ls=":",
                       label=f"× utilization {p.usable_gib:.1f} GiB")
    ax.set_xticks([0], [f"{p.gpu.name if p.gpu else 'GPU'} (TP {p.tp})"])
    ax.set_ylabel("GiB per GPU")
    ax.set_title(f"{p.arch.name}: memory per GPU — {'fits' if p.fits else 'OOM risk'}")
    ax.legend(loc="upper right", fontsize=8)
    return fig


def _capacity(p: Plan) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    top = max(p.max_model_len, 4096)
    lengths = [n for n in _LENGTHS if n <= top * 2] or [p.max_model_len]
    rows = sweep_max_model_len(p, lengths)
    if rows:
        xs = [r[0] for r in rows]
        ax.plot(xs, [r[2] for r in rows], marker="o", color="#55a868",
                label="max concurrency at that max_model_len")
        ax.axhline(1.0, color="#c44e52", lw=1, ls="--", label="1 request (vLLM's floor)")
        ax.axvline(p.max_model_len, color="grey", lw=1, ls=":", label="chosen max_model_len")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        twin = ax.twinx()
        twin.plot(xs, [r[1] for r in rows], color="#4c72b0", lw=1, alpha=0.6,
                  label="KV tokens (as vLLM reports)")
        twin.set_ylabel("KV cache tokens")
        twin.legend(loc="lower left", fontsize=8)
    ax.set_xlabel("max_model_len (tokens)")
    ax.set_ylabel("requests at full length")
    ax.set_title("KV capacity vs context length")
    ax.legend(loc="upper right", fontsize=8)
    return fig


def plan_figures(p: Plan) -> tuple[Figure, Figure]:
    """(memory stack per GPU, concurrency and KV tokens against max_model_len)."""
    return _stack(p), _capacity(p)
