"""Reading a recipe file: YAML → :class:`Recipe`, every problem named by its key path."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from benchlib._exceptions import RecipeError, format_problems, validation_problems
from benchlib.adapters import Speculative
from benchlib.recipe._schema import EngineSpec, ModelSpec, Recipe

__all__ = ["RecipeError", "format_problems", "load_recipe", "map_paths", "open_recipe",
           "portable", "recipe_from_dict", "resolve_paths"]


def _problems(exc: ValidationError) -> list[tuple[str, str]]:
    return [(where or "(top level)", msg) for where, msg in validation_problems(exc)]


def recipe_from_dict(data: Any, source: Path = Path("<recipe>")) -> Recipe:
    """Validate already-parsed YAML."""
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise RecipeError(source, [("(top level)", f"expected a mapping of keys, got {kind}")])
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        raise RecipeError(source, _problems(exc)) from None


def load_recipe(path: Path) -> Recipe:
    """Read and validate ``path``; raise :class:`RecipeError` (exit code 2) on any problem."""
    if not path.is_file():
        raise RecipeError(path, [("(file)", "no such file")])
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
        raise RecipeError(path, [(where, f"not valid YAML: {getattr(exc, 'problem', exc)}")]
                          ) from None
    except UnicodeDecodeError:
        raise RecipeError(path, [("(file)", "not UTF-8 text")]) from None
    return recipe_from_dict(data, path)


def open_recipe(path: Path, base: Path | None = None) -> Recipe:
    """The one way a command reads a recipe file: read, validated and every relative path
    resolved against ``base`` (the working directory when None), once; everything after it
    receives this typed recipe."""
    return resolve_paths(load_recipe(path), Path.cwd() if base is None else base)


def map_paths(recipe: Recipe, fn: Callable[[Path], Path]) -> Recipe:
    """The same recipe with ``fn`` applied to every path it names (model folder and
    tokenizer, engine interpreter, executable and lock, draft model, dataset files, runs to
    compare, reference files, the write-up skeleton, the accuracy data and interpreter — the
    variants' too): the one list of a
    recipe's paths."""

    def fix(p: Path | None) -> Path | None:
        return None if p is None else fn(p)

    def model(m: ModelSpec) -> ModelSpec:
        return m.model_copy(update={"local_path": fix(m.local_path),
                                    "tokenizer": fix(m.tokenizer)})

    def spec(s: Speculative) -> Speculative:
        return s.model_copy(update={"draft_model": fix(s.draft_model)})

    def engine(e: EngineSpec) -> EngineSpec:
        return e.model_copy(update={"python": fix(e.python), "executable": fix(e.executable),
                                    "lock": fix(e.lock),
                                    "speculative": spec(e.speculative)})

    variants = [v.model_copy(update={
        "engine": engine(v.engine) if v.engine else None,
        "model": model(v.model) if v.model else None,
        "speculative": spec(v.speculative) if v.speculative else None})
        for v in recipe.variants]
    scenarios = [s.model_copy(update={"dataset_path": fix(s.dataset_path)})
                 for s in recipe.scenarios]
    compare = recipe.compare.model_copy(update={
        "runs": [fn(r) for r in recipe.compare.runs],
        "references": [fn(r) for r in recipe.compare.references]})
    return recipe.model_copy(update={"model": model(recipe.model),
                                     "engine": engine(recipe.engine), "scenarios": scenarios,
                                     "variants": variants, "compare": compare,
                                    "writeup": fix(recipe.writeup),
                                    "accuracy": recipe.accuracy.model_copy(update={
                                        "data_dir": fn(recipe.accuracy.data_dir),
                                        "python": fn(recipe.accuracy.python)})
                                    if recipe.accuracy else None})


def portable(path: Path, root: Path) -> Path:
    """``path`` relative to ``root`` when it lies inside it, else unchanged: how a run folder
    records a path so that the folder (or the kit) can move."""
    absolute = Path(os.path.abspath(path))
    return Path(os.path.relpath(absolute, root)) if absolute.is_relative_to(root) else path


def resolve_paths(recipe: Recipe, base: Path) -> Recipe:
    """The same recipe with every relative path made absolute against ``base``, so steps
    that run elsewhere (a notebook kernel, a later resume) see the same files."""
    # absolute, but symlinks kept: a venv's bin/python must stay the venv's
    return map_paths(recipe, lambda p: Path(os.path.abspath(base / p)))
