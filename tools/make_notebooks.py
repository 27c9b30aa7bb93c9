"""Write notebooks/*.ipynb from the step declarations (benchlib/pipeline/steps/): thin, no
outputs, a markdown heading, one tagged ``parameters`` cell (``name: type = default  #
meaning`` per parameter, which ``papermill --help-notebook`` reads), then the step's cells.

The notebooks are generated so their cells stay uniform and stripped and their parameters
match what the runner passes; edit the step's module, then run
``python tools/make_notebooks.py``. A test checks the committed notebooks match it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from benchlib.pipeline import Step, step_table

OUT = Path(__file__).resolve().parents[1] / "notebooks"
#: every notebook's first cell: the kit, and the recipe its parameters name
LOAD = "from benchlib import pipeline as bp\n\nrecipe = bp.load(recipe_path)"
NOTEBOOKS: dict[str, Step[Any]] = step_table()


def parameters_source(step: Step[Any]) -> str:
    """The parameters cell: one annotated assignment per declared parameter."""
    return "\n".join(p.source for p in step.all_params)


def build(name: str) -> nbformat.NotebookNode:
    step = NOTEBOOKS[name]
    nb: nbformat.NotebookNode = new_notebook()
    nb.metadata["kernelspec"] = {"name": "benchlib", "display_name": "Python (benchlib)",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [new_markdown_cell(f"# {step.title}\n{step.about}"),
                new_code_cell(parameters_source(step), metadata={"tags": ["parameters"]}),
                *[new_code_cell(c) for c in (LOAD, *step.cells)]]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name}-{i}"
    return nb


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for name in NOTEBOOKS:
        nbformat.write(build(name), str(OUT / f"{name}.ipynb"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
