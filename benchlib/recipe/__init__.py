"""Recipes (``params/*.yaml``): a strict schema and a loader that names every problem."""

from benchlib.adapters import METHODS, SpecMethod, Speculative
from benchlib.recipe._assumptions import Assumption, assumption_caveats
from benchlib.recipe._fair import DIFFERENCES, Difference, caveats, variant_settings
from benchlib.recipe._load import (
    RecipeError,
    format_problems,
    load_recipe,
    map_paths,
    open_recipe,
    portable,
    recipe_from_dict,
    resolve_paths,
)
from benchlib.recipe._parallel import DEFAULT_INIT_PORTS, Parallel
from benchlib.recipe._schema import (
    ALL_STEPS,
    AccuracySpec,
    CompareSpec,
    EngineSpec,
    FunctionalChecks,
    HardwareSpec,
    ModelSpec,
    Recipe,
    Scenario,
    StepName,
    Variant,
)
from benchlib.recipe._secrets import recipe_secrets

__all__ = [
    "ALL_STEPS",
    "DEFAULT_INIT_PORTS",
    "DIFFERENCES",
    "METHODS",
    "AccuracySpec",
    "Assumption",
    "CompareSpec",
    "Difference",
    "EngineSpec",
    "FunctionalChecks",
    "HardwareSpec",
    "ModelSpec",
    "Parallel",
    "Recipe",
    "RecipeError",
    "Scenario",
    "SpecMethod",
    "Speculative",
    "StepName",
    "Variant",
    "assumption_caveats",
    "caveats",
    "format_problems",
    "load_recipe",
    "map_paths",
    "open_recipe",
    "portable",
    "recipe_from_dict",
    "recipe_secrets",
    "resolve_paths",
    "variant_settings",
]
