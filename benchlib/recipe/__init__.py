"""Recipes (``params/*.yaml``): a strict schema and a loader that names every problem."""

from benchlib.recipe._load import (
    RecipeError,
    format_problems,
    load_recipe,
    map_paths,
    recipe_from_dict,
    resolve_paths,
)
from benchlib.recipe._schema import (
    CompareSpec,
    EngineSpec,
    HardwareSpec,
    ModelSpec,
    Recipe,
    Scenario,
)

__all__ = [
    "CompareSpec",
    "EngineSpec",
    "HardwareSpec",
    "ModelSpec",
    "Recipe",
    "RecipeError",
    "Scenario",
    "format_problems",
    "load_recipe",
    "map_paths",
    "recipe_from_dict",
    "resolve_paths",
]
