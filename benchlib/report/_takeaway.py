"""The takeaway of a comparison, from the run's own numbers: which engine was faster per user
and in total, whether speculation paid off on each, and the accepted / drafted counts behind
it with the client-server reconciliation.

What: :func:`takeaway` reads the report context (:func:`~benchlib.report.report_context`:
each variant's measurements, 04_compare's speedups) and returns :class:`Takeaway`: the
engine races (per scenario: per-user tok/s at the lowest concurrency, total output tok/s at
the highest; each engine by its fastest variant there), the speculation outcomes (per
speculating variant, scenario and concurrency: the speedup over the same engine without
speculation and the server's counts with the client's) and ``lines``, the same as
sentences for a write-up's summary to cite (``{% for line in takeaway.lines %}``): first the
tallies (which engine won how many scenarios per user and in total; per speculating variant,
how many measurements it paid off, cost or broke even), then a line per scenario's race and
one per speculating variant and scenario (its speedup at each concurrency; the counts and
their reconciliation at the lowest, where a client's chunks can be set against them).

Why: a write-up whose summary has to be typed by hand either repeats numbers (and goes stale)
or says nothing; these sentences are computed, so they change with the run. A ratio within
``even_within`` of 1 is called even: the kit does not repeat a run, so a few per cent is not
told apart from run-to-run spread on a shared machine.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from benchlib.runs import VariantRow

__all__ = ["EngineRace", "SpecOutcome", "Takeaway", "takeaway"]


class EngineRace(BaseModel):
    """Two engines on one scenario and concurrency, each by its fastest variant."""

    scenario: str = Field(description="the scenario")
    concurrency: int = Field(description="the concurrency compared")
    measure: Literal["per user", "in total"] = Field(
        description="per user: tok/s from the median TPOT; in total: output tok/s")
    winner: str = Field(description="the faster engine (kind and version)")
    winner_variant: str = Field(description="its fastest variant there")
    winner_tok_s: float = Field(description="that variant's figure")
    loser: str = Field(description="the slower engine")
    loser_variant: str = Field(description="its fastest variant there")
    loser_tok_s: float = Field(description="that variant's figure")
    ratio: float = Field(description="winner / loser")


class SpecOutcome(BaseModel):
    """One speculating variant on one scenario and concurrency."""

    variant: str = Field(description="the speculating variant")
    baseline: str | None = Field(description="the same engine without speculation")
    scenario: str = Field(description="the scenario")
    concurrency: int = Field(description="the concurrency")
    speedup: float | None = Field(description="per-user tok/s over the baseline's (null: "
                                               "not measured on one side)")
    verdict: Literal["paid off", "cost", "about even", "not measured"] = Field(
        description="the speedup read against even_within")
    draft_tokens: float | None = Field(description="draft tokens the server proposed")
    accepted_tokens: float | None = Field(description="of those, accepted (the server's)")
    acceptance_rate: float | None = Field(description="accepted / draft tokens")
    source: str | None = Field(description="metrics (/metrics counters) or timings "
                                           "(llama.cpp's per-request timings)")
    client_accepted_tokens: float | None = Field(
        description="output tokens − chunks, as the client saw them")
    reconciled: bool | None = Field(description="the client's count matched the server's")
    why_not: str | None = Field(description="why the client's chunks cannot be reconciled")
    accepted_rel_diff: float | None = Field(description="client vs server accepted, relative")
    truncation_allowance: float | None = Field(
        description="draft tokens max_tokens may have cut off (counted by the server, never "
                    "sent): how far the client's count may fall short")
    timings_rel_diff: float | None = Field(
        description="llama.cpp: per-request timings vs /metrics, relative")


class Takeaway(BaseModel):
    """What the comparison shows, as data and as sentences."""

    races: list[EngineRace] = Field(default_factory=list, description="engine against engine")
    speculation: list[SpecOutcome] = Field(default_factory=list,
                                           description="each speculating variant's outcome")
    lines: list[str] = Field(default_factory=list, description="the same, as sentences")


def _num(value: Any) -> float | None:
    """A finite positive number, else None (NaN, 0, missing)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value == value and value > 0 else None


def _races(ctx: Mapping[str, Any], names: list[str], scenario: str,
           concurrencies: list[int]) -> list[EngineRace]:
    out = []
    loads = [("per user", min(concurrencies), "per_user_tok_s")]
    if max(concurrencies) > 1:  # one stream's total is its per-user speed again
        loads.append(("in total", max(concurrencies), "output_throughput"))
    for measure, conc, key in loads:
        best: dict[str, tuple[str, float]] = {}  # engine → (variant, figure)
        for name in names:
            v = ctx["variants"][name]
            figure = _num(((v.get(scenario) or {}).get(f"c{conc}") or {}).get(key))
            if figure is not None and figure > best.get(v["engine"], ("", 0.0))[1]:
                best[v["engine"]] = (name, figure)
        if len(best) < 2:
            continue
        (w, (wv, wf)), (lo, (lv, lf)) = sorted(best.items(), key=lambda kv: -kv[1][1])[:2]
        out.append(EngineRace(scenario=scenario, concurrency=conc, measure=measure, winner=w,
                              winner_variant=wv, winner_tok_s=wf, loser=lo, loser_variant=lv,
                              loser_tok_s=lf, ratio=wf / lf))
    return out


def _outcomes(ctx: Mapping[str, Any], rows: list[VariantRow],
              even_within: float) -> list[SpecOutcome]:
    out = []
    for row in rows:
        if row.scenario is None or row.concurrency is None:
            continue
        name, scenario, conc = row.variant, row.scenario, row.concurrency
        if name not in ctx["variants"] or ctx["variants"][name]["speculative"] == "off":
            continue
        record = ((ctx["variants"][name].get(scenario) or {}).get(f"c{conc}") or {})
        spec = record.get("speculative") or {}
        speedup = _num(row.speedup)
        verdict: Literal["paid off", "cost", "about even", "not measured"] = (
            "not measured" if speedup is None else "about even"
            if abs(speedup - 1) <= even_within else "paid off" if speedup > 1 else "cost")
        out.append(SpecOutcome(
            variant=name, baseline=row.speedup_over or None, scenario=scenario,
            concurrency=conc, speedup=speedup, verdict=verdict,
            draft_tokens=spec.get("draft_tokens"), accepted_tokens=spec.get("accepted_tokens"),
            acceptance_rate=spec.get("acceptance_rate"), source=spec.get("source"),
            client_accepted_tokens=spec.get("client_accepted_tokens"),
            reconciled=spec.get("reconciled"), why_not=spec.get("why_not"),
            accepted_rel_diff=spec.get("accepted_rel_diff"),
            truncation_allowance=spec.get("truncation_allowance"),
            timings_rel_diff=spec.get("timings_rel_diff")))
    return out


def _headline(races: list[EngineRace], outcomes: list[SpecOutcome]) -> list[str]:
    """One sentence on the engines, one per speculating variant: the counts of the rest."""
    out = []
    for measure in ("per user", "in total"):
        mine = [r for r in races if r.measure == measure]
        winners = Counter(r.winner for r in mine)
        if winners:
            out.append(f"{measure.capitalize()}: " + "; ".join(
                f"{engine} was faster in {n} of {len(mine)} scenarios" for engine, n in
                winners.most_common()) + ".")
    for variant in dict.fromkeys(o.variant for o in outcomes):
        verdicts = Counter(o.verdict for o in outcomes if o.variant == variant)
        total = sum(verdicts.values())
        out.append(f"Speculation on {variant}: " + ", ".join(
            f"{v} in {n} of {total} measurements" for v, n in verdicts.most_common()) + ".")
    return out


def _race_line(scenario: str, per_user: EngineRace | None, total: EngineRace | None) -> str:
    parts = []
    for r, what, unit in ((per_user, "per user", "tok/s from the median TPOT"),
                          (total, "in total", "output tok/s")):
        if r is not None:
            parts.append(f"{r.winner} was faster {what} at concurrency {r.concurrency} "
                         f"({r.winner_variant} {r.winner_tok_s:.1f} against {r.loser_variant} "
                         f"{r.loser_tok_s:.1f} {unit}: {r.ratio:.2f}×)")
    return f"{scenario}: " + "; ".join(parts) + "."


def _reconciliation(o: SpecOutcome) -> str:
    if o.reconciled and o.client_accepted_tokens is not None and o.accepted_tokens:
        short = o.accepted_tokens - o.client_accepted_tokens
        why = ("within 2 %" if abs(o.accepted_rel_diff or 0) <= 0.02 else
               f"the {short:,.0f} fewer within the {o.truncation_allowance or 0:,.0f} draft "
               "tokens max_tokens can cut off")
        return (f"the client's output tokens − chunks give {o.client_accepted_tokens:,.0f}: "
                f"reconciled ({why})")
    if o.timings_rel_diff is not None:
        return (f"the client cannot count them ({o.why_not}); the per-request timings "
                f"(draft_n, draft_n_accepted) agree with /metrics within "
                f"{o.timings_rel_diff * 100:.1f} %")
    return f"not reconciled with the client: {o.why_not or 'no client count'}"


def _spec_line(group: list[SpecOutcome]) -> str:
    """One speculating variant on one scenario: its speedup at each concurrency, and the
    counts at the lowest (where a client's chunks can be reconciled with them)."""
    first = group[0]
    verdicts = {o.verdict for o in group if o.verdict != "not measured"}
    verdict = verdicts.pop() if len(verdicts) == 1 else "was mixed" if verdicts else (
        "was not measured")
    speedups = ", ".join(
        f"{o.speedup:.2f}× at concurrency {o.concurrency}" if o.speedup is not None else
        f"no ratio at concurrency {o.concurrency}" for o in group)
    head = (f"{first.variant} on {first.scenario}: speculation {verdict} ({speedups}, "
            f"over {first.baseline}'s per-user tok/s)")
    if first.draft_tokens is None or first.accepted_tokens is None:
        return head + "; the server reported no draft counts."
    rate = first.acceptance_rate or 0.0
    counts = (f". At concurrency {first.concurrency} the server accepted "
              f"{first.accepted_tokens:,.0f} of {first.draft_tokens:,.0f} draft tokens "
              f"({rate * 100:.0f} %)")
    if verdict == "cost" and rate >= 0.5:
        counts += ", yet it was slower: drafting cost more time than the accepted tokens saved"
    return head + counts + "; " + _reconciliation(first) + "."


def takeaway(ctx: Mapping[str, Any], even_within: float = 0.05) -> Takeaway:
    """The takeaway of the run in ``ctx`` (empty for a run without variants)."""
    names = [v["name"] for v in (ctx.get("recipe") or {}).get("variants") or []]
    if not names:
        return Takeaway()
    scenarios = {s["name"]: list(s.get("concurrencies") or [1])
                 for s in ctx["recipe"].get("scenarios") or [] if not s.get("ramp_input_lens")}
    races = [r for s, cs in scenarios.items() for r in _races(ctx, names, s, cs)]
    rows = [VariantRow.model_validate(r)
            for r in (ctx.get("compare") or {}).get("variants") or []]
    outcomes = sorted(_outcomes(ctx, rows, even_within),
                      key=lambda o: (names.index(o.variant), list(scenarios).index(o.scenario)
                                     if o.scenario in scenarios else 0, o.concurrency))
    lines = _headline(races, outcomes)
    for scenario in scenarios:
        by = {r.measure: r for r in races if r.scenario == scenario}
        if by:
            lines.append(_race_line(scenario, by.get("per user"), by.get("in total")))
    groups: dict[tuple[str, str], list[SpecOutcome]] = {}
    for o in outcomes:
        groups.setdefault((o.variant, o.scenario), []).append(o)
    lines += [_spec_line(g) for g in groups.values()]
    return Takeaway(races=races, speculation=outcomes, lines=lines)
