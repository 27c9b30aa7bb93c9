"""The secrets a run of a recipe could see, by the names the recipe holds (never values).

Here rather than in :mod:`benchlib._secrets`, which sits below every package (it scrubs what
they write) and so cannot know what a recipe is (:mod:`benchlib._layers`)."""

from __future__ import annotations

from collections.abc import Mapping

from benchlib._secrets import env_names, env_secret
from benchlib.recipe._schema import Recipe

__all__ = ["recipe_secrets"]


def recipe_secrets(recipe: Recipe, env: Mapping[str, str] | None = None) -> list[str]:
    """The values of every secret a run of ``recipe`` could see: the API key, the hub token
    and every ``${NAME}`` of ``engine.args``."""
    names = [recipe.engine.api_key_env, recipe.model.hf_token_env]
    names += env_names(" ".join(recipe.engine.args))
    return [value for n in names if (value := env_secret(n, env))]
