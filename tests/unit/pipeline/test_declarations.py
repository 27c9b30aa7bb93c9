"""A step is declared once: every notebook's parameters, as papermill reads them, are the
declaration's (names, types, defaults, meaning); the runner binds exactly those, typed as
declared; the table holds the recipe's steps; the runner names no step."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import papermill as pm
import pytest
from pydantic import ValidationError

from benchlib.pipeline import Param, RunFolder, step_table
from benchlib.pipeline._declare import EngineFacts, RunFacts, StepInputs
from benchlib.provenance import ModelFiles
from benchlib.recipe import recipe_from_dict
from benchlib.recipe._schema import ALL_STEPS

REPO = Path(__file__).resolve().parents[3]
TABLE = step_table()


def test_the_table_holds_the_recipes_steps_in_order() -> None:
    assert list(TABLE) == list(ALL_STEPS)
    for step in TABLE.values():
        assert (REPO / "notebooks" / step.notebook).is_file()


@pytest.mark.parametrize("name", list(TABLE))
def test_notebook_parameters_are_the_declaration(name: str) -> None:
    step = TABLE[name]
    seen = pm.inspect_notebook(REPO / "notebooks" / step.notebook)
    assert list(seen) == [p.name for p in step.all_params]
    for p in step.all_params:
        got = seen[p.name]
        assert got["inferred_type_name"] == p.type, p.name  # not "None" (Unknown type)
        assert ast.literal_eval(got["default"]) == p.default, p.name
        assert got["help"] == p.help, p.name


def inputs(tmp_path: Path, **engine: Any) -> StepInputs:
    recipe = recipe_from_dict({
        "name": "t", "model": {"id": "m", "local_path": str(tmp_path / "model")},
        "engine": {"kind": "vllm", "python": "/bin/python"},
        "scenarios": [{"name": "a"}], "compare": {"runs": [str(tmp_path / "old")]}})
    return StepInputs(folder=RunFolder(path=tmp_path / "run"), recipe=recipe,
                      engine=EngineFacts(**engine),
                      facts=RunFacts(model=ModelFiles(path=tmp_path / "dl")))


@pytest.mark.parametrize("name", list(TABLE))
def test_the_runner_binds_every_declared_parameter(name: str, tmp_path: Path) -> None:
    params = TABLE[name].runner_params(inputs(
        tmp_path, base_url="http://127.0.0.1:9", command="vllm serve m", log_name="engine.log",
        startup_s=1.5))
    assert list(params) == [p.name for p in TABLE[name].all_params]
    assert params["recipe_path"] == "recipe.json" and params["run_dir"] == "."
    assert params["results_path"] == f".results/{name}.json"


def test_what_the_runner_binds() -> None:
    got = {n: TABLE[n].runner_params(inputs(Path("/x"), base_url="http://h:1"))
           for n in ("02_launch", "03_measure", "04_compare")}
    assert got["02_launch"]["startup_s"] is None and got["02_launch"]["base_url"] == "http://h:1"
    assert got["03_measure"]["model_path"] == "/x/dl"  # 01_download's folder
    assert got["04_compare"]["other_runs"] == ["/x/old"]


def test_a_parameter_papermill_cannot_read_is_refused() -> None:
    with pytest.raises(ValidationError, match="no '='"):
        Param(name="x", type="str", default="", help="a=b")
    with pytest.raises(ValidationError):
        Param(name="x", type="float", default="1", help="not a float")


#: where a step's name may be written: the recipe's vocabulary (its schema and rules), and the
#: steps' keys
NAMED_IN = {"recipe/_schema.py", "recipe/_rules.py", "runs/_keys.py"}


def test_no_module_names_a_step_but_the_keys() -> None:
    """Steps are named once (``benchlib.runs.STEP_*``; the runner walks the table): no
    ``NN_step`` literal anywhere else in benchlib."""
    root = REPO / "benchlib"
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() in NAMED_IN:
            continue
        tree = ast.parse(path.read_text())
        literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                    and isinstance(n.value, str) and re.fullmatch(r"\d\d_[a-z_]+", n.value)]
        assert literals == [], path


def test_each_step_saves_its_keys_model() -> None:
    """A step's declared result is the model its key in benchlib.runs reads back."""
    from benchlib.runs import STEP_KEYS

    keys = {k.name: k.model for k in STEP_KEYS}
    assert {name: step.result for name, step in step_table().items()} == keys
