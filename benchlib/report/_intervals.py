"""The report's sections on whether the numbers can be acted on (issue 27): every
measurement's headline figures with their 95 % intervals, each variant's figures over the
baseline variant's with a verdict, TTFT from the schedule beside TTFT from the send where a
paced load made them differ, and a conversations run's per-turn view. Each section is left
out when the run has nothing for it, so a report of an older run reads as before."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from benchlib.measure import Interval
from benchlib.report._view import RunView
from benchlib.report._writeup import fmt_number

__all__ = ["interval_sections"]

#: how far TTFT from the schedule must exceed TTFT from the send to be worth a row (ms)
_DIFFERS_MS = 0.5


def _table(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(fmt_number(r.get(c))))}</td>"
                                    for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _interval(iv: Interval) -> str:
    if iv.value is None:
        return iv.note or "n/a"
    text = str(fmt_number(iv.value))
    if iv.low is not None:
        text += f" [{fmt_number(iv.low)}, {fmt_number(iv.high)}]"
    return text


def _intervals(view: RunView) -> str:
    rows = []
    figures: list[str] = []
    for v, scenario, conc, m in view.measurements():
        block = m.intervals
        if block is None:
            continue
        row = {"variant": v.label, "scenario": scenario, "concurrency": str(conc),
               "interval_from": (f"{block.repeats} repeats" if block.source == "repeats"
                                 else "requests (one run)")}
        for figure, iv in block.figures.items():
            figures += [figure] if figure not in figures else []
            row[figure] = _interval(iv)
        rows.append(row)
    if not rows:
        return ""
    return ("<h2 id='intervals'>Headline figures with 95 % intervals</h2><p class='muted'>"
            "Bootstrap percentile intervals (benchlib.measure.stats._intervals): over the repeats "
            "and their requests where the scenario ran repeats; from one run's requests "
            "otherwise, which says how well that run pins a figure down, not how another "
            "run would come out. A p99 from fewer than 100 requests is not given as a "
            "number.</p>"
            + _table(rows, ["variant", "scenario", "concurrency", "interval_from", *figures]))


def _significance(view: RunView) -> str:
    rows = view.compare.significance if view.compare else []
    if not rows:
        return ""
    shown = [{**r.model_dump(), "ratio": r.ratio if r.ratio is not None else r.note,
              "interval": (f"[{fmt_number(r.low)}, {fmt_number(r.high)}]"
                           if r.low is not None else r.note or "")}
             for r in rows]
    return ("<h2 id='significance'>Are the differences real?</h2><p class='muted'>Each "
            "variant's figure over the baseline variant's (the recipe's first), with its "
            "bootstrap 95 % interval: significant only when the interval excludes 1.</p>"
            + _table(shown, ["variant", "baseline", "scenario", "concurrency", "figure",
                             "ratio", "interval", "verdict", "interval_from"]))


def _schedule(view: RunView) -> str:
    rows = []
    for v, scenario, conc, m in view.measurements():
        sched, sent = m.median_ttft_from_schedule_ms, m.median_ttft_text_ms
        if sched is None or sent is None or sched - sent < _DIFFERS_MS:
            continue
        rows.append({"variant": v.label, "scenario": scenario, "concurrency": str(conc),
                     "request_rate": m.request_rate,
                     "median_ttft_text_ms": sent, "median_ttft_from_schedule_ms": sched,
                     "p99_ttft_from_schedule_ms": m.p99_ttft_from_schedule_ms,
                     "median_client_queue_time_ms": m.median_client_queue_time_ms})
    if not rows:
        return ""
    return ("<h2 id='schedule-ttft'>TTFT from the schedule</h2><p class='muted'>Where "
            "requests were released at a rate (or a trace's times) and had to wait for a "
            "slot, TTFT counted from when the schedule had each request due, beside TTFT "
            "from its send: the difference is the client-side wait a user would have "
            "felt.</p>"
            + _table(rows, ["variant", "scenario", "concurrency", "request_rate",
                            "median_ttft_text_ms", "median_ttft_from_schedule_ms",
                            "p99_ttft_from_schedule_ms", "median_client_queue_time_ms"]))


def _conversations(view: RunView) -> str:
    rows = []
    for v, scenario, conc, m in view.measurements():
        if m.conversations is None:
            continue
        # over the whole measurement on /metrics (vLLM), where it was sampled
        server = m.server_metrics.prefix_cache_hit_rate if m.server_metrics else None
        for t in m.conversations.per_turn:
            rows.append({"variant": v.label, "scenario": scenario,
                         "concurrency": str(conc), **t.model_dump(),
                         "metrics_hit_rate": server})
    if not rows:
        return ""
    return ("<h2 id='conversations'>Conversations</h2><p class='muted'>Per turn of the "
            "multi-turn sessions: TTFT and prompt length (the history grows), and the prefix "
            "cache's hit rate as the server reported it per response (llama.cpp's "
            "timings.cache_n) or over the measurement on /metrics (vLLM).</p>"
            + _table(rows, ["variant", "scenario", "concurrency", "turn", "requests",
                            "median_ttft_text_ms", "median_prompt_tokens",
                            "prefix_cache_hit_rate", "metrics_hit_rate"]))


def interval_sections(view: RunView) -> str:
    """The sections above that the run has something for, in that order."""
    return "".join([_intervals(view), _significance(view), _schedule(view),
                    _conversations(view)])
