"""Notebooks stay thin and clean: generated, no outputs, one tagged parameters cell of
literals, logic in benchlib."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))

import make_notebooks  # noqa: E402

NAMES = list(make_notebooks.NOTEBOOKS)


def test_all_steps_have_a_notebook() -> None:
    assert NAMES == ["00_plan", "01_download", "02_launch", "03_measure", "04_compare"]


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_matches_generator(name: str) -> None:
    committed = json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text())
    generated = json.loads(nbformat.writes(make_notebooks.build(name)))
    assert committed == generated, "run: python tools/make_notebooks.py"


@pytest.mark.parametrize("name", NAMES)
def test_no_outputs_and_one_parameters_cell_of_literals(name: str) -> None:
    nb = json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code)
    tagged = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    for node in ast.parse("".join(tagged[0]["source"])).body:
        assert isinstance(node, ast.AnnAssign) and node.value is not None
        ast.literal_eval(node.value)  # literals only
    for cell in code:  # thin: no function or class definitions, a few lines each
        if cell in tagged:
            continue
        tree = ast.parse("".join(cell["source"]))
        assert not any(isinstance(n, ast.FunctionDef | ast.ClassDef) for n in ast.walk(tree))
        assert len("".join(cell["source"]).splitlines()) <= 6
