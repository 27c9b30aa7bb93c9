"""The run at a glance: the answer to "which engine, which setting, how much faster" before
any detail (issue 40).

What: :func:`glance` reads one row per variant × scenario × concurrency (04_compare's
variants table, :data:`~benchlib.pipeline.steps._variants.VARIANT_COLUMNS`; or, for a run
that did not compare, its measurements) and returns :class:`Glance`: the headline table,
variants × scenarios, each cell the figures its result keys mean —

    per_user_tok_s     1000 / median TPOT, at the scenario's lowest concurrency
    output_throughput  output tokens/s of all requests together (vLLM's key), at its highest
    median_ttft_ms     at the lowest concurrency
    speedup            a speculating variant's per_user_tok_s over its own "off" variant's
                       (speedup_over), at the lowest concurrency, with its bootstrap 95 %
                       interval and whether the interval excludes 1 (significant)

— the same table as Markdown (``writeup.md``'s, a notebook's), and at most five sentences of
takeaway, each carrying its number: the fastest variant per user and in total, engine against
engine (each by its fastest variant) where two engines ran, and what speculation bought.

Why: the report, the write-up and ``04_compare`` open with the same answer, computed from the
run, so a reader looks before reading and the three never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from benchlib.measure import SpecCost

__all__ = ["FIGURE_FILE", "MAX_LINES", "Glance", "GlanceCell", "GlanceScenario",
           "GlanceVariant", "cell_texts", "glance", "headers", "speculates",
           "speedup_text"]

#: the figure 04_compare keeps in the run folder (the same drawing as the report's)
FIGURE_FILE = "variants.png"

#: the takeaway under the table: no more sentences than a reader takes in at a glance
MAX_LINES = 5


class GlanceCell(BaseModel):
    """One variant on one scenario."""

    per_user_tok_s: float | None = Field(None, description="at the lowest concurrency")
    output_throughput: float | None = Field(None, description="at the highest concurrency")
    median_ttft_ms: float | None = Field(None, description="at the lowest concurrency")
    speedup: float | None = Field(None, description="per_user_tok_s over speedup_over's")
    speedup_low: float | None = Field(None, description="its 95 % interval's lower end")
    speedup_high: float | None = Field(None, description="its upper end")
    significant: bool | None = Field(None, description="the interval excludes 1 (null: none)")


class GlanceScenario(BaseModel):
    """A column group: a scenario and the concurrencies its figures are read at."""

    name: str
    low: int = Field(description="the lowest concurrency measured (per user, TTFT, speedup)")
    high: int = Field(description="the highest (in total)")


class GlanceVariant(BaseModel):
    """A row: a variant and its cells by scenario."""

    name: str
    engine: str = ""
    speculative: str = ""
    speedup_over: str | None = Field(None, description="its own engine without speculation")
    cells: dict[str, GlanceCell] = Field(default_factory=dict)


class Glance(BaseModel):
    """The headline table, as data and as Markdown, and its takeaway."""

    scenarios: list[GlanceScenario] = Field(default_factory=list)
    variants: list[GlanceVariant] = Field(default_factory=list)
    lines: list[str] = Field(default_factory=list, description=f"≤ {MAX_LINES} sentences")
    table: str = Field("", description="the table as Markdown")
    legend: str = Field("", description="what the table's figures are (their result keys)")
    figure: str = Field("", description=f"{FIGURE_FILE} where the run folder keeps it (for "
                                        "writeup.md to show), else empty")


def _num(value: Any) -> float | None:
    """A finite number, else None (None, NaN, text)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _significant(verdict: Any) -> bool | None:
    """04_compare's speedup_verdict ("significant, from …", "not significant, …") read."""
    if not isinstance(verdict, str) or verdict.startswith("no interval"):
        return None
    return verdict.startswith("significant")


def _cells(rows: Sequence[Mapping[str, Any]], scenarios: list[GlanceScenario]
           ) -> list[GlanceVariant]:
    at = {(r["variant"], r["scenario"], r["concurrency"]): r for r in rows}
    out: dict[str, GlanceVariant] = {}
    for r in rows:
        v = out.setdefault(r["variant"], GlanceVariant(
            name=r["variant"], engine=r.get("engine") or "",
            speculative=r.get("speculative") or "", speedup_over=r.get("speedup_over")))
        for s in scenarios:
            if s.name != r["scenario"] or s.name in v.cells:
                continue
            low = at.get((v.name, s.name, s.low), {})
            high = at.get((v.name, s.name, s.high), {})
            v.cells[s.name] = GlanceCell(
                per_user_tok_s=_num(low.get("per_user_tok_s")),
                output_throughput=_num(high.get("output_throughput")),
                median_ttft_ms=_num(low.get("median_ttft_ms")),
                speedup=_num(low.get("speedup")), speedup_low=_num(low.get("speedup_low")),
                speedup_high=_num(low.get("speedup_high")),
                significant=_significant(low.get("speedup_verdict")))
    return list(out.values())


def speedup_text(c: GlanceCell) -> str:
    """``4.14× [2.75, 4.54], significant``; ``–`` where there is no speedup."""
    if c.speedup is None:
        return "–"
    text = f"{c.speedup:.2f}×"
    if c.speedup_low is not None and c.speedup_high is not None:
        text += f" [{c.speedup_low:.2f}, {c.speedup_high:.2f}]"
    return text + {True: ", significant", False: ", not significant",
                   None: ", no interval"}[c.significant]


#: what the headline table's figures are (their result keys, so they keep their meaning)
LEGEND = ("per-user tok/s: per_user_tok_s (1000 / median TPOT) and TTFT: median_ttft_ms, "
          "at the scenario's lowest concurrency; total tok/s: output_throughput (all "
          "requests' output tokens/s) at its highest")
LEGEND_SPEEDUP = ("; speedup: per_user_tok_s over its own engine's without speculation, "
                  "at the lowest, with its bootstrap 95 % interval (significant when it "
                  "excludes 1)")


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def speculates(g: Glance) -> bool:
    """Whether any variant has an "off" variant to be a speedup over (else no such column)."""
    return any(v.speedup_over for v in g.variants)


def headers(g: Glance, s: GlanceScenario) -> list[str]:
    """A scenario's column headers, each naming the concurrency it is read at."""
    return [f"per-user tok/s (c{s.low})", f"total tok/s (c{s.high})",
            f"TTFT ms (c{s.low})"] + [f"speedup (c{s.low})"] * speculates(g)


def cell_texts(g: Glance, c: GlanceCell | None) -> list[str]:
    """A cell's figures as the table prints them."""
    texts = (["n/a"] * 3 + ["–"] if c is None else
             [_fmt(c.per_user_tok_s), _fmt(c.output_throughput), _fmt(c.median_ttft_ms),
              speedup_text(c)])
    return texts if speculates(g) else texts[:3]


def _markdown(g: Glance) -> str:
    head = ["variant"] + [f"{s.name}: {h}" for s in g.scenarios for h in headers(g, s)]
    rows = [[f"{v.name} ({v.engine}, {v.speculative or 'off'})"]
            + [t for s in g.scenarios for t in cell_texts(g, v.cells.get(s.name))]
            for v in g.variants]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _leader(g: Glance, key: str, what: str, unit: str) -> str | None:
    """Which variant was fastest on ``key`` in how many scenarios, and its widest lead."""
    wins: dict[str, int] = {}
    lead: tuple[float, str, str, float, str, float, int] | None = None
    for s in g.scenarios:
        ranked = sorted(((getattr(v.cells[s.name], key), v.name) for v in g.variants
                         if s.name in v.cells and getattr(v.cells[s.name], key)),
                        reverse=True)
        if len(ranked) < 2:
            continue
        (x, first), (y, second) = ranked[:2]
        wins[first] = wins.get(first, 0) + 1
        conc = s.low if key == "per_user_tok_s" else s.high
        if lead is None or x / y > lead[0]:
            lead = (x / y, s.name, first, x, second, y, conc)
    if lead is None:
        return None
    ratio, scenario, first, x, second, y, conc = lead
    total = sum(wins.values())
    who = first if total == 1 else ", ".join(
        f"{n} in {k} of {total} scenarios" for n, k in sorted(wins.items(),
                                                               key=lambda kv: -kv[1]))
    by = "by" if len(wins) == 1 else "the widest lead"
    return (f"{what.capitalize()}, the fastest was {who}, {by} {ratio:.2f}× over the next "
            f"({scenario} at c{conc}: {first} {x:,.1f} against {second} {y:,.1f} {unit}).")


def _engines(races: Sequence[Mapping[str, Any]]) -> str | None:
    """Engine against engine, each by its fastest variant (takeaway.races)."""
    parts = []
    for measure in ("per user", "in total"):
        mine = [r for r in races if r["measure"] == measure]
        if not mine:
            continue
        wins: dict[str, list[float]] = {}
        for r in mine:
            wins.setdefault(r["winner"], []).append(r["ratio"])
        parts.append(f"{measure} " + ", ".join(
            f"{e} in {len(rs)} of {len(mine)} ({min(rs):.2f}–{max(rs):.2f}×)"
            if len(rs) > 1 else f"{e} in {len(rs)} of {len(mine)} ({rs[0]:.2f}×)"
            for e, rs in wins.items()))
    if not parts:
        return None
    return ("Engine against engine (each by its fastest variant), faster "
            + "; ".join(parts) + ".")


def _break_even(costs: Sequence[SpecCost]) -> str:
    """What a verify step costs here and where speculation pays, over the scenarios."""
    if not costs:
        return ""
    low, high = min(c.cost_ratio for c in costs), max(c.cost_ratio for c in costs)
    ratio = f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f}"
    paying = [c for c in costs if c.breakeven_tokens_per_step is not None]
    if not paying:
        return f"; a verify step costs {ratio} plain steps here: more than k + 1, it never pays"
    tau = max(c.breakeven_tokens_per_step or 0.0 for c in paying)
    rate = max(c.breakeven_acceptance_rate or 0.0 for c in paying)
    return (f"; a verify step costs {ratio} plain steps here, so it pays above {tau:.2f} "
            f"tokens per step ({rate * 100:.0f} % of drafts accepted)")


def _speculation(v: GlanceVariant, g: Glance, costs: Sequence[SpecCost] = ()) -> str | None:
    cells = [(s, v.cells[s.name]) for s in g.scenarios
             if s.name in v.cells and v.cells[s.name].speedup is not None]
    if not cells or not v.speedup_over:  # a speedup is over its own engine's "off" variant
        return None
    s, best = max(cells, key=lambda sc: sc[1].speedup or 0.0)
    interval = (f"95 % interval {best.speedup_low:.2f}–{best.speedup_high:.2f}, "
                if best.speedup_low is not None and best.speedup_high is not None else "")
    sig = {True: "significant", False: "not significant", None: "no interval"}[
        best.significant]
    more = sum(1 for _, c in cells if c.significant)
    tally = (f"; significant in {more} of {len(cells)} scenarios" if len(cells) > 1 else "")
    mine = [c for c in costs if c.variant == v.name]
    return (f"Speculation on {v.name} ({v.speculative}) over {v.speedup_over}: per user up "
            f"to {best.speedup:.2f}× ({s.name} at c{s.low}, {interval}{sig}){tally}"
            f"{_break_even(mine)}.")


def glance(rows: Sequence[Mapping[str, Any]], races: Sequence[Mapping[str, Any]] = (),
           costs: Sequence[SpecCost] = ()) -> Glance:
    """The glance of a run from its variant rows (``variant``, ``engine``, ``speculative``,
    ``scenario``, ``concurrency`` and the figures above); ``races``: the takeaway's engine
    races (:class:`~benchlib.report._takeaway.EngineRace` as JSON); ``costs``: 04_compare's
    speculation costs (a speculating variant's sentence says where it pays)."""
    rows = [r for r in rows if r.get("scenario") is not None
            and r.get("concurrency") is not None]
    concs: dict[str, list[int]] = {}
    for r in rows:
        concs.setdefault(r["scenario"], []).append(int(r["concurrency"]))
    g = Glance(scenarios=[GlanceScenario(name=n, low=min(c), high=max(c))
                          for n, c in concs.items()])
    g.variants = _cells(rows, g.scenarios)
    if not g.variants:
        return g
    g.table = _markdown(g)
    g.legend = LEGEND + LEGEND_SPEEDUP * speculates(g) + "."
    lines = [_leader(g, "per_user_tok_s", "per user", "tok/s"),
             _leader(g, "output_throughput", "in total", "output tok/s")
             if any(s.high > s.low for s in g.scenarios) else None,
             _engines(races)]
    spec = [line for v in g.variants if (line := _speculation(v, g, costs))]
    found = [line for line in lines if line]
    if len(found) + len(spec) > MAX_LINES:  # one sentence for every speculating variant
        spec = ["Speculation per user, each over its own engine without it: " + "; ".join(
            s.removeprefix("Speculation on ").rstrip(".") for s in spec) + "."]
    g.lines = found + spec
    return g

