"""Batch runs: several recipes in turn (``benchlib run A.yaml B.yaml`` or a folder of them),
one engine alive at a time, past a failed one, with an index of the runs written as it goes.

The index lives in ``<outputs>/YYYY-MM-DD/batch-HHMMSS/`` as ``index.json`` (a
:class:`BatchIndex`) and ``index.html`` (a page a browser opens offline): each recipe's status
(``ok``, ``failed``, ``invalid``, ``interrupted``, ``pending``), its run folder (relative to
the index, so the outputs folder can be moved or shared whole), how long it took, its steps'
statuses, the error that stopped it, and its headline figures (per variant, scenario and
concurrency: median TTFT and TPOT, per-user and total tokens/s). Both files are rewritten
after every recipe, so a batch killed halfway leaves an index of what it reached.
"""

from __future__ import annotations

import datetime as dt
import html
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from benchlib._exceptions import BenchlibError, UsageError
from benchlib.pipeline._runner import RunSummary
from benchlib.runs import STEP_MEASURE, MeasureStep, RunFolder, measurements, write_atomic

__all__ = ["HEADLINE_COLUMNS", "BatchEntry", "BatchIndex", "Headline", "expand_recipes",
           "run_batch"]

Status = Literal["ok", "failed", "invalid", "interrupted", "pending"]


class Headline(BaseModel):
    """One measurement of a batch's run: the figures the index shows."""

    variant: str = Field(description="the variant ('' without variants)")
    scenario: str = Field(description="the scenario")
    concurrency: int = Field(description="requests in flight at once")
    completed: int = Field(description="successful requests")
    failed: int = Field(description="failed requests")
    median_ttft_ms: float | None = Field(None, description="vLLM's median TTFT")
    median_tpot_ms: float | None = Field(None, description="vLLM's median TPOT")
    per_user_tok_s: float | None = Field(None, description="1000 / median TPOT to text")
    output_throughput: float | None = Field(None, description="output tokens per second")


HEADLINE_COLUMNS = list(Headline.model_fields)


class BatchEntry(BaseModel):
    """One recipe of a batch."""

    recipe: str = Field(description="the recipe file, as given")
    status: Status = Field(description="ok: every step ok; failed: a step failed or the run "
                           "stopped; invalid: the recipe was refused before anything ran; "
                           "interrupted: Ctrl-C; pending: not reached")
    run_dir: str | None = Field(None, description="its run folder, relative to the index")
    seconds: float | None = Field(None, description="wall time of its run")
    steps: dict[str, str] = Field(default_factory=dict, description="step → status")
    error: str | None = Field(None, description="what stopped it")
    headline: list[Headline] = Field(default_factory=list,
                                     description="one row per measurement")


class BatchIndex(BaseModel):
    """The index of a batch: its recipes in order, as far as it got."""

    started: str = Field(description="UTC time the batch started")
    finished: bool = Field(description="every recipe was reached")
    entries: list[BatchEntry]


def expand_recipes(params: Sequence[Path]) -> list[Path]:
    """Recipe files from files and folders (a folder: its ``*.yaml`` / ``*.yml``, sorted)."""
    out: list[Path] = []
    for p in params:
        if p.is_dir():
            found = sorted([*p.glob("*.yaml"), *p.glob("*.yml")])
            if not found:
                raise UsageError("params", f"{p} holds no *.yaml recipes")
            out += found
        else:
            out.append(p)
    return out


def _headline(run_dir: Path) -> list[Headline]:
    """Every measurement of the run: its headline figures."""
    folder = RunFolder(path=run_dir)
    variants = [p.name for p in sorted(run_dir.iterdir()) if p.is_dir()
                and RunFolder(path=p).results(STEP_MEASURE).is_file()] or [""]
    rows: list[Headline] = []
    for name in variants:
        measured = folder.variant(name).result(STEP_MEASURE) or MeasureStep()
        rows += [Headline(variant=name, scenario=scenario, concurrency=conc,
                          completed=m.completed, failed=m.failed,
                          median_ttft_ms=m.median_ttft_ms, median_tpot_ms=m.median_tpot_ms,
                          per_user_tok_s=m.per_user_tok_s,
                          output_throughput=m.output_throughput)
                 for scenario, conc, m in measurements(measured)]
    return rows


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    return html.escape("" if value is None else str(value))


def render_index(index: BatchIndex) -> str:
    """The index as one self-contained HTML page."""
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>benchlib batch "
             f"{html.escape(index.started)}</title><style>body{{font-family:sans-serif;"
             "margin:2em}table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px "
             "solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}"
             ".ok{color:#070}.failed,.invalid,.interrupted{color:#b00}.pending{color:#777}"
             "</style></head><body>",
             f"<h1>Batch of {len(index.entries)} recipes</h1><p>started "
             f"{html.escape(index.started)} UTC; "
             f"{'finished' if index.finished else 'not finished'}</p>",
             "<table><tr><th>recipe</th><th>status</th><th>run folder</th><th>seconds</th>"
             "<th>error</th></tr>"]
    for e in index.entries:
        link = (f"<a href='{html.escape(e.run_dir)}/'>{html.escape(e.run_dir)}</a>"
                if e.run_dir else "")
        parts.append(f"<tr><td>{html.escape(e.recipe)}</td><td class='{e.status}'>"
                     f"{e.status}</td><td>{link}</td><td>{_cell(e.seconds)}</td>"
                     f"<td>{_cell(e.error)}</td></tr>")
    parts.append("</table>")
    for e in index.entries:
        if not e.headline:
            continue
        parts.append(f"<h2>{html.escape(e.recipe)}</h2><table><tr>"
                     + "".join(f"<th>{c}</th>" for c in HEADLINE_COLUMNS) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in r.model_dump().values())
                  + "</tr>" for r in e.headline]
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "".join(parts)


def _write(folder: Path, index: BatchIndex) -> None:
    write_atomic(folder / "index.json", index.model_dump_json(indent=2) + "\n")
    write_atomic(folder / "index.html", render_index(index))


def run_batch(recipes: Sequence[Path], outputs: Path,
              run_one: Callable[[Path], RunSummary],
              log: Callable[[str], None] = print) -> tuple[Path, BatchIndex]:
    """Run ``recipes`` in turn with ``run_one`` (one recipe's whole run: its engines are gone
    when it returns), past failures; the index folder and the final index. A Ctrl-C stops
    the batch after recording the recipe it interrupted, and is raised again."""
    now = dt.datetime.now(dt.UTC)
    folder = outputs / now.strftime("%Y-%m-%d") / f"batch-{now.strftime('%H%M%S')}"
    folder.mkdir(parents=True, exist_ok=True)
    index = BatchIndex(started=now.isoformat(timespec="seconds"), finished=False,
                       entries=[BatchEntry(recipe=str(r), status="pending") for r in recipes])
    _write(folder, index)
    for i, recipe in enumerate(recipes):
        log(f"\n=== batch {i + 1}/{len(recipes)}: {recipe}")
        start = time.perf_counter()
        entry = index.entries[i]
        try:
            summary = run_one(recipe)
        except KeyboardInterrupt:
            entry = entry.model_copy(update={"status": "interrupted",
                                             "seconds": time.perf_counter() - start})
            index.entries[i] = entry
            _write(folder, index)
            raise
        except BenchlibError as exc:
            status: Status = "invalid" if isinstance(exc, UsageError) else "failed"
            entry = entry.model_copy(update={"status": status, "error": str(exc),
                                             "seconds": time.perf_counter() - start})
            log(f"{recipe}: {status}: {exc}")
        else:
            failed = [s for s, st in summary.statuses.items() if st != "ok"]
            entry = entry.model_copy(update={
                "status": "ok" if summary.ok else "failed",
                "run_dir": os.path.relpath(summary.run_dir.resolve(), folder.resolve()),
                "seconds": time.perf_counter() - start, "steps": dict(summary.statuses),
                "error": f"steps not ok: {', '.join(failed)}" if failed else None,
                "headline": _headline(summary.run_dir)})
        index.entries[i] = entry
        _write(folder, index)
    index = index.model_copy(update={"finished": True})
    _write(folder, index)
    return folder, index
