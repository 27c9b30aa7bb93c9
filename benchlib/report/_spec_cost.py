"""The report's section on what speculation costs (``#spec-cost``): each speculating variant's
verify step against its own engine's plain step, the break-even tokens per step and
acceptance, the speedup a published figure would need here, and the figure (04_compare's
``spec_cost``, :class:`benchlib.measure.SpecCost`)."""

from __future__ import annotations

from benchlib.report._figures import spec_cost_png
from benchlib.report._markup import esc, figure, table
from benchlib.report._view import RunView

__all__ = ["spec_cost_section"]


def spec_cost_section(view: RunView) -> str:
    """What speculation costs per engine step, each speculating variant against its own
    engine without it (04_compare's ``spec_cost``): the table, the formula, the figure;
    nothing when the run has none."""
    rows = view.compare.spec_cost if view.compare else []
    if not rows:
        return ""
    cells = [{"variant": f"{c.variant} over {c.baseline}", "scenario": c.scenario, "k": c.k,
              "step_ms": round(c.step_ms, 2), "plain_step_ms": round(c.plain_step_ms, 2),
              "steps (server's)": f"{c.steps}" + ("" if c.server_steps is None
                                                   else f" ({c.server_steps:.0f})"),
              "r": round(c.cost_ratio, 3),
              "break-even τ": (None if c.breakeven_tokens_per_step is None
                               else round(c.breakeven_tokens_per_step, 2)),
              "break-even acceptance": (None if c.breakeven_acceptance_rate is None
                                        else f"{c.breakeven_acceptance_rate * 100:.1f} %"),
              "τ measured": round(c.measured_tokens_per_step, 3),
              "ceiling": f"{c.ceiling_speedup:.2f}×",
              "published": "; ".join(f"{p.speedup:.2f}× needs τ {p.tokens_per_step:.2f}"
                                     for p in c.projections
                                     if p.label.startswith("to match"))}
             for c in rows]
    return ("<h2 id='spec-cost'>What speculation costs: the break-even acceptance</h2>"
            "<p class='muted'>One request at a time, each decode step of a speculating "
            "variant drafts k tokens and verifies them (step_ms, the wire's steps; the "
            "server's own count beside where it keeps one), against a plain step of the same "
            "engine (plain_step_ms, its TPOT). " + esc(rows[0].formula) + ". The measured "
            "τ is a property of these weights (dummy or random weights accept almost "
            "nothing); the break-even and the projections hold for any weights on this GPU "
            "and engine.</p>"
            + "<div id='spec-cost-table'>" + table(cells, list(cells[0])) + "</div>"
            + figure("spec-cost", spec_cost_png(view), "Speedup against tokens per step "
                     "(a projection): where each line crosses 1 is its break-even; a star "
                     "is a published speedup at the τ it needs here"))
