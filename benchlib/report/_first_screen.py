"""The report's first screen: the answer before the details (issue 40). The headline table
(variants × scenarios: per-user tok/s, total tok/s, TTFT, speculation's speedup over its own
"off" variant with its interval and significance), the figure people read engines by
(per-user against total throughput, every variant), at most five sentences of takeaway, and
the folded sections below as links (``#ID``: a write-up can link to them too).

Why this order: a reader comparing engines looks first and reads second; the numbers are
:mod:`benchlib.runs._glance`'s, the same that ``writeup.md`` and ``04_compare``
open with."""

from __future__ import annotations

import html
import re

from benchlib.report._markup import figure
from benchlib.runs._glance import (
    Glance,
    GlanceCell,
    cell_texts,
    headers,
    speculates,
    speedup_text,
)

__all__ = ["contents", "first_screen"]

_FOLDED = re.compile(r"<details id='([\w-]+)'><summary><h2>(.*?)</h2>", re.DOTALL)


#: the table's columns on screen: the concurrency each is read at is in the group header
_HEADERS = ["per-user tok/s", "total tok/s", "TTFT ms", "speedup"]


def _cells(g: Glance, c: GlanceCell | None) -> str:
    """A variant's cells on one scenario; the speedup's interval and verdict on a line of
    their own, so the cell stays two lines high."""
    texts = cell_texts(g, c)
    out = "".join(f"<td>{html.escape(t)}</td>" for t in texts[:3])
    if speculates(g):
        if c is None or c.speedup is None:
            out += "<td>–</td>"
        else:
            interval, _, verdict = speedup_text(c).removeprefix(f"{c.speedup:.2f}×").rpartition(
                ", ")
            out += (f"<td><b>{c.speedup:.2f}×</b> <span class='nowrap'>"
                    f"{html.escape(interval.strip())}</span><br>"
                    f"<span class='muted'>{html.escape(verdict)}</span></td>")
    return out


def _table(g: Glance) -> str:
    span = len(headers(g, g.scenarios[0]))
    top = "".join(f"<th colspan='{span}' class='group'>{html.escape(s.name)} <span "
                  f"class='conc'>(c{s.low}; total at c{s.high})</span></th>"
                  for s in g.scenarios)
    sub = "".join(f"<th>{h}</th>" for _ in g.scenarios for h in _HEADERS[:span])
    rows = "".join(
        f"<tr><td><b>{html.escape(v.name)}</b><br><span class='muted'>"
        f"{html.escape(v.engine)}, {html.escape(v.speculative or 'off')}</span></td>"
        + "".join(_cells(g, v.cells.get(s.name)) for s in g.scenarios) + "</tr>"
        for v in g.variants)
    return (f"<table id='headline'><tr><th rowspan='2'>variant</th>{top}</tr><tr>{sub}</tr>"
            f"{rows}</table><p class='muted legend'>{html.escape(g.legend)}</p>")


def first_screen(g: Glance, pareto: bytes | None) -> str:
    """The at-a-glance section: table, figure, takeaway; nothing when nothing was measured."""
    if not g.variants:
        return ("<section id='at-a-glance'><p class='muted'>Nothing was measured: the "
                "sections below say how far the run got.</p></section>")
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in g.lines)
    return ("<section id='at-a-glance'>" + _table(g)
            + figure("pareto", pareto, "Per-user against total output tokens/s along "
                     "concurrency, every variant (up and right is better)")
            + (f"<ul id='takeaway'>{lines}</ul>" if lines else "") + "</section>")


def contents(folded: str) -> str:
    """The folded sections of ``folded`` as one line of links."""
    links = [f"<a href='#{i}'>{title}</a>" for i, title in _FOLDED.findall(folded)]
    return ("<nav id='contents' class='muted'>Details, folded below: " + " · ".join(links)
            + "</nav>") if links else ""
