"""The report page's pieces of markup: a table of rows, an inline figure, and a section
folded under its heading (``<details>``, its anchor kept), so every section looks alike and
a write-up can link to any of them (``report.html#plan-vs-engine`` opens it)."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence

from benchlib.report._writeup import fmt_number

__all__ = ["esc", "figure", "fold", "table"]

#: a section as the report writes it: ``<h2 id='ID'>TITLE</h2>`` and what follows it
_SECTION = re.compile(r"<h2 id='([\w-]+)'>(.*?)</h2>", re.DOTALL)


def esc(value: object) -> str:
    """A value as a cell shows it (numbers as prose prints them), escaped."""
    return html.escape(str(fmt_number(value)))


def table(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    """Rows under their result keys as headers (broken at underscores: ``<wbr>``)."""
    if not rows:
        return "<p class='muted'>none</p>"
    head = "".join(f"<th>{html.escape(c).replace('_', '_<wbr>')}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(r.get(c))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def figure(fig_id: str, png: bytes | None, caption: str) -> str:
    """A PNG inline (a data: URI: the page reads offline), ``fig-ID`` its anchor."""
    if png is None:
        return ""
    data = base64.b64encode(png).decode()
    return (f"<figure id='fig-{fig_id}'><img alt='{html.escape(caption)}' "
            f"src='data:image/png;base64,{data}'><figcaption>{html.escape(caption)}"
            "</figcaption></figure>")


def fold(sections: str) -> str:
    """Each ``<h2 id='ID'>`` section of ``sections`` folded: ``<details id='ID'>`` with the
    heading as its summary, closed until the reader opens it (or follows ``#ID``)."""
    heads = list(_SECTION.finditer(sections))
    if not heads:
        return sections
    out = [sections[:heads[0].start()]]
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(sections)
        out.append(f"<details id='{head[1]}'><summary><h2>{head[2]}</h2></summary>"
                   f"{sections[head.end():end]}</details>")
    return "".join(out)
