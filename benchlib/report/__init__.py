"""A run's write-up and report: one HTML page a reader opens offline in a browser
(:func:`render_report`), and the write-up's Markdown for a blog.

``render_report(run_dir)`` reads the run folder (:func:`report_context`), makes or keeps the
user's ``writeup.ipynb`` (:mod:`._writeup`: prose whose numbers are cited by name), and writes
``report.html`` and ``writeup.md`` beside the notebooks. ``benchlib run`` renders it when a run
ends (a failed run too: it shows what was reached); ``benchlib report RUN_DIR`` renders it
again after the write-up was edited.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat

from benchlib._exceptions import UsageError
from benchlib.recipe import Recipe
from benchlib.references import Reference
from benchlib.report._context import ALIASES, context_of, report_context
from benchlib.report._energy import power_png
from benchlib.report._html import FIGURES, render_html
from benchlib.report._relpaths import relative_paths
from benchlib.report._shape import shape_context
from benchlib.report._view import read_run
from benchlib.report._writeup import (
    DEFAULT_SKELETON,
    fmt_number,
    render_writeup,
    writeup_notebook,
)
from benchlib.runs import kit_root, write_atomic

__all__ = ["ALIASES", "DEFAULT_SKELETON", "FIGURES", "ReportFiles", "check_skeleton",
           "fmt_number", "render_report", "render_writeup", "report_context", "shape_context",
           "writeup_notebook"]


@dataclass(frozen=True)
class ReportFiles:
    """What a render wrote."""

    html: Path
    markdown: Path
    notebook: Path


def check_skeleton(recipe: Recipe,
                   references: list[tuple[Reference, dict[str, float]]] | None = None) -> int:
    """Render the recipe's write-up skeleton (the kit's when it names none) against the shape
    of a complete run of it; a name the run will not have raises
    :class:`~benchlib._exceptions.UsageError`. Returns how many cells it checked.
    ``references``: the recipe's, when the caller has read them already."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="benchlib-writeup-") as tmp:
        notebook = writeup_notebook(Path(tmp), recipe.writeup)
        render_writeup(notebook, shape_context(recipe, references))
        return sum(1 for _ in nbformat.read(str(notebook), as_version=4).cells) - 1


def render_report(run_dir: str | Path, skeleton: Path | None = None,
                  strict: bool = True) -> ReportFiles:
    """Render the run at ``run_dir``: ``report.html``, ``writeup.md`` (and ``writeup.ipynb``
    from ``skeleton`` the first time). A write-up that cites a name the run lacks raises
    (``strict``), or else (a run that just ended, some steps failed) the report says so in
    place of the write-up and is written all the same."""
    view = read_run(run_dir)
    run = view.folder
    ctx = context_of(view)
    state = run.read_state()
    ctx["recipe_path"] = state.recipe if state else "RECIPE.yaml"
    notebook = writeup_notebook(run.path, skeleton)
    try:
        markdown = render_writeup(notebook, ctx)
    except UsageError as exc:
        if strict:
            raise
        markdown = (f"> **The write-up was not rendered:** {exc}. Edit `{notebook.name}` "
                    "and run `benchlib report` on this folder.\n")
    power = power_png(view)
    page = relative_paths(render_html(view, ctx, markdown, state.statuses if state else {},
                                      power), run.path,
                          [kit_root()])
    files = ReportFiles(html=run.path / "report.html", markdown=run.path / "writeup.md",
                        notebook=notebook)
    write_atomic(files.markdown, markdown)
    write_atomic(files.html, page)
    return files
