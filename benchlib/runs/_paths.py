"""Paths as a run folder records them: relative where they point inside the run folder or
the kit, so a run folder can be moved, copied to another machine or shared.

The runner hands the notebooks paths relative to the run folder (the kernel works there),
``recipe.json`` holds paths inside the kit relative to the kit root (:func:`load_recipe`
makes them absolute again), and text that names a file of the run (an engine error saying
where its log is) names it relative to the run folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from benchlib.recipe import Recipe, map_paths, portable, resolve_paths

__all__ = ["kit_root", "load_recipe_snapshot", "portable", "portable_recipe", "relative_text"]

_ROOT = Path(__file__).resolve().parents[2]


def kit_root() -> Path:
    """The folder of the kit's checkout (``notebooks/``, ``environment.yml``)."""
    return _ROOT


def portable_recipe(recipe: Recipe, root: Path) -> Recipe:
    """``recipe`` (paths absolute) with every path inside ``root`` made relative to it."""
    return map_paths(recipe, lambda p: portable(p, root))


def load_recipe_snapshot(path: str | Path) -> Recipe:
    """A run's ``recipe.json``, its kit-relative paths made absolute against this kit."""
    recipe = Recipe.model_validate_json(Path(path).read_text(encoding="utf-8"))
    return resolve_paths(recipe, kit_root())


def relative_text(text: str, run_dir: Path) -> str:
    """``text`` with the run folder's absolute path dropped from the paths it names."""
    return text.replace(f"{run_dir}{os.sep}", "").replace(str(run_dir), ".")
