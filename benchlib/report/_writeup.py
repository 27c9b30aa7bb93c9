"""The write-up: prose the user edits in a notebook, whose numbers are cited from the run's
results by name and never typed.

A skeleton (Markdown, one cell per ``## `` section) becomes ``writeup.ipynb`` in the run
folder the first time a report is rendered; from then on the notebook is the user's (open it
in JupyterLab, edit the cells, run ``benchlib report RUN_DIR``). Each cell is a Jinja
template over :func:`~benchlib.report.report_context`'s names — ``{{
variants.vllm_ngram.chat.c1.tok_s }} tok/s`` — rendered in a sandbox with strict names: a name
the run does not have stops the render and says which cell, which name, and what the cell
could have cited, rather than leaving a blank in published prose. Floats print at a
precision that suits their size (``109.42``, ``1,651.5``, ``0.812``); a format of one's own
is Jinja's ``{{ '%.1f' | format(x) }}`` (text is printed as it is).
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import nbformat
from jinja2 import StrictUndefined, TemplateError, UndefinedError
from jinja2.sandbox import SandboxedEnvironment

from benchlib._exceptions import UsageError

__all__ = ["DEFAULT_SKELETON", "fmt_number", "render_writeup", "writeup_notebook"]

#: the kit's own skeleton, for recipes that name none
DEFAULT_SKELETON = Path(__file__).with_name("writeup.md")
_HEADING = re.compile(r"^## ", re.MULTILINE)
#: the notebook's first cell (raw: shown in JupyterLab, never rendered)
_INTRO = ("benchlib write-up: edit the Markdown cells below. Cite numbers from the run's "
          "results by name, e.g. {{ variants.NAME.SCENARIO.c1.tok_s }}, and run `benchlib "
          "report RUN_DIR`: report.html and writeup.md are rendered with the run's own "
          "numbers. The names are listed in the report's appendix.")


def fmt_number(value: Any) -> Any:
    """A number as prose shows it: ≥ 1,000 with separators and one decimal, ≥ 1 with two,
    below that three significant digits; ``None`` as ``n/a``; everything else unchanged."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, float):
        return value
    size = abs(value)
    if size >= 1000:
        return f"{value:,.1f}"
    if size >= 1 or value == 0:
        return f"{value:.2f}"
    return f"{value:.3g}"


def writeup_notebook(run_dir: Path, skeleton: Path | None) -> Path:
    """``writeup.ipynb`` in ``run_dir``: the user's, if it exists; else made from
    ``skeleton`` (the kit's default when None), one Markdown cell per ``## `` section."""
    path = run_dir / "writeup.ipynb"
    if path.is_file():
        return path
    source = skeleton or DEFAULT_SKELETON
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError("writeup", f"cannot read {source} ({exc.strerror or exc})") from None
    starts = [m.start() for m in _HEADING.finditer(text)]
    bounds = [0, *starts, len(text)] if not starts or starts[0] else [*starts, len(text)]
    cells = [text[a:b].strip("\n") for a, b in itertools.pairwise(bounds)]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_raw_cell(_INTRO)]
    nb.cells += [nbformat.v4.new_markdown_cell(c) for c in cells if c.strip()]
    nb.metadata["benchlib"] = {"skeleton": source.name}
    nbformat.write(nb, str(path))
    return path


def _names(context: Mapping[str, Any], prefix: str = "", depth: int = 0) -> list[str]:
    out = []
    for key, value in context.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and depth < 5:
            out += _names(value, name, depth + 1)
        else:
            out.append(name)
    return out


def render_writeup(notebook: Path, context: Mapping[str, Any]) -> str:
    """The write-up's Markdown, every citation filled from ``context``."""
    env = SandboxedEnvironment(undefined=StrictUndefined, finalize=fmt_number,
                               autoescape=False, keep_trailing_newline=True)
    try:
        nb = nbformat.read(str(notebook), as_version=4)
    except (OSError, ValueError) as exc:
        raise UsageError(str(notebook), f"not a readable notebook ({exc})") from None
    parts = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        try:
            parts.append(env.from_string(cell.source).render(**context))
        except UndefinedError as exc:
            cited = re.findall(r"\{\{\s*([\w.\[\]'\"-]+)", cell.source)
            names = _names(context)
            close = sorted({m for c in cited for m in difflib.get_close_matches(
                c.replace("[", ".").replace("]", "").replace("'", ""), names, n=3,
                cutoff=0.6)})
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UsageError(f"{notebook.name} cell {index}",
                             f"cites a name the run does not have ({exc.message}){hint}"
                             ) from None
        except TemplateError as exc:
            raise UsageError(f"{notebook.name} cell {index}", f"not a valid template: {exc}"
                             ) from None
    return "\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n"
