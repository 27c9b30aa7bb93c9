"""Reading a recipe: every way a file can be unusable is named by where it is (the file, a
line and column, a key path), and ``map_paths`` reaches every path a recipe names and
nothing else."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchlib.recipe import (
    Recipe,
    load_recipe,
    map_paths,
    portable,
    recipe_from_dict,
    resolve_paths,
)
from benchlib.recipe._load import RecipeError

REPO = Path(__file__).resolve().parents[3]
RECIPES = sorted((REPO / "params").glob("*.yaml")) + sorted((REPO / "params" / "seeds").glob("*.yaml"))


@pytest.mark.parametrize(("content", "problem"), [
    (None, ("(file)", "no such file")),
    (b"a: b: c\n", ("line 1, column 5", "not valid YAML: mapping values are not allowed here")),
    (b"\xff\xfe", ("(file)", "not UTF-8 text")),
    # a reader error has no line mark and no separate problem: the whole error, at the file
    (b"a: \x07\n", ("(file)", "not valid YAML: unacceptable character #x0007: special "
                  'characters are not allowed\n  in "<unicode string>", position 3')),
    (b"- 1\n", ("(top level)", "expected a mapping of keys, got a list")),
    (b"", ("(top level)", "expected a mapping of keys, got empty")),
    (b"name: x\nbogus: 1\n", ("bogus", "unknown key (misspelt?)")),
])
def test_an_unusable_file_names_the_place(tmp_path: Path, content: bytes | None,
                                          problem: tuple[str, str]) -> None:
    path = tmp_path / "r.yaml"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    assert err.value.path == path and err.value.exit_code == 2
    assert problem in err.value.problems
    assert str(err.value) == f"{path}: " + "\n".join(f"  {k}: {m}" for k, m in
                                                     err.value.problems)


def test_a_problem_of_the_whole_recipe_is_at_the_top_level() -> None:
    """A rule over several keys (unique scenario names) has no key path of its own."""
    data = yaml.safe_load((REPO / "params" / "demo.yaml").read_text(encoding="utf-8"))
    data["scenarios"].append(data["scenarios"][0])
    with pytest.raises(RecipeError) as err:
        recipe_from_dict(data, Path("x.yaml"))
    name = data["scenarios"][0]["name"]
    assert err.value.problems == [("(top level)", f"scenario names must be unique: {name}")]
    assert err.value.path == Path("x.yaml")


def _paths(value: Any, at: str = "") -> dict[str, Any]:
    """Every leaf of a dumped recipe by its key path."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _paths(item, f"{at}.{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _paths(item, f"{at}[{i}]").items()}
    return {at: value}


def _synthetic() -> Recipe:
    """The demo recipe with the paths no recipe under params/ names: a draft model (the
    engine's and a variant's), runs to compare, a dataset file, a variant's interpreter."""
    data = yaml.safe_load((REPO / "params" / "demo.yaml").read_text(encoding="utf-8"))
    data["engine"]["speculative"] = {"method": "draft", "draft_model": "drafts/d", "k": 3}
    data["variants"][0]["speculative"] = {"method": "draft", "draft_model": "drafts/v", "k": 3}
    data.setdefault("compare", {})["runs"] = ["outputs/old"]
    data["scenarios"][0]["dataset_path"] = "data/p.jsonl"
    next(v for v in data["variants"] if "engine" in v)["engine"]["python"] = "envs/v/python"
    return recipe_from_dict(data)


def _recipes() -> list[Recipe]:
    return [load_recipe(path) for path in RECIPES] + [_synthetic()]


def test_map_paths_maps_every_path_and_nothing_else() -> None:
    for recipe in _recipes():
        before = _paths(recipe.model_dump())
        after = _paths(map_paths(recipe, lambda p: Path("/mapped") / p).model_dump())
        assert before.keys() == after.keys()
        for key, value in before.items():
            expected = Path("/mapped") / value if isinstance(value, Path) else value
            assert after[key] == expected, (recipe.name, key)


def test_the_recipes_name_every_kind_of_path_between_them() -> None:
    """So the test above reaches each field map_paths maps (with a value, not None)."""
    named = {re.sub(r"\[\d+\]", "", key).lstrip(".") for recipe in _recipes()
             for key, value in _paths(recipe.model_dump()).items() if isinstance(value, Path)}
    assert named >= {
        "model.local_path", "model.tokenizer", "engine.python", "engine.executable",
        "engine.speculative.draft_model", "variants.engine.python", "variants.model.local_path",
        "variants.model.tokenizer", "variants.speculative.draft_model",
        "scenarios.dataset_path", "compare.runs", "compare.references", "writeup",
        "accuracy.data_dir", "accuracy.python"}, sorted(named)


def test_resolve_paths_makes_relative_paths_absolute_against_the_base(tmp_path: Path) -> None:
    """Relative against ``base``, absolute ones kept, and a symlink not followed (a venv's
    bin/python must stay the venv's)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    recipe = _synthetic()
    resolved = resolve_paths(recipe, tmp_path / "link")
    assert recipe.writeup is not None and not recipe.writeup.is_absolute()
    assert resolved.writeup == tmp_path / "link" / recipe.writeup
    assert resolved.compare.runs == [tmp_path / "link" / "outputs" / "old"]
    again = resolve_paths(resolved, Path("/elsewhere"))
    assert again.writeup == resolved.writeup


def test_open_recipe_resolves_against_its_base_once(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """open_recipe: read, validated and every relative path taken from ``base`` — the
    working directory when none is given."""
    from benchlib.recipe import open_recipe

    path = tmp_path / "r.yaml"
    path.write_text("name: r\nmodel: {id: m, local_path: models/m}\nengine: {kind: vllm}\n"
                    "scenarios: [{name: s, input_len: 8, output_len: 4}]\n", encoding="utf-8")
    base = tmp_path / "kit"
    assert open_recipe(path, base).model.local_path == base / "models" / "m"
    monkeypatch.chdir(tmp_path)
    assert open_recipe(path).model.local_path == tmp_path / "models" / "m"


def test_portable_makes_a_path_inside_the_root_relative_and_leaves_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "kit"
    assert portable(root / "params" / "a.yaml", root) == Path("params/a.yaml")
    assert portable(root, root) == Path(".")
    assert portable(tmp_path / "elsewhere" / "b.lock", root) == tmp_path / "elsewhere" / "b.lock"
    assert portable(tmp_path / "kit-2" / "c", root) == tmp_path / "kit-2" / "c"  # a prefix only
    # a relative path is read against the working folder, and left as given outside the root
    monkeypatch.chdir(tmp_path)
    assert portable(Path("kit/x"), root) == Path("x")
    assert portable(Path("y"), root) == Path("y")
