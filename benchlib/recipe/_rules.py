"""The recipe's rules that span several fields, as plain functions: the schema's validators
(benchlib/recipe/_schema.py) call them, each raising ValueError with the message the user
reads (pydantic reports it at the validator's place: the model's top level, or ``plan``).
Plain functions so that mutation testing reaches them (mutmut leaves decorated ones alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from benchlib._exceptions import validation_message
from benchlib._secrets import SECRET_FLAGS, is_env_ref, is_secret_name
from benchlib.adapters import ADAPTERS, PLANNED_KINDS, SPECULATIVE_FLAGS, adapter
from benchlib.recipe._assumptions import check_assumptions
from benchlib.recipe._fair import check_comparable
from benchlib.recipe._parallel import check_engine_parallel, check_machines

if TYPE_CHECKING:
    from benchlib.recipe._schema import EngineSpec, Recipe

__all__ = ["DUMMY_WEIGHT_ENGINES", "check_assumed", "check_comparable_variants",
           "check_dummy_weights", "check_engine", "check_machine_layout", "check_plan_keys",
           "check_steps", "check_unique_names", "plan_engine_settings"]

#: the engines that make random weights from a config alone (``--load-format dummy``)
DUMMY_WEIGHT_ENGINES = tuple(k for k, a in ADAPTERS.items() if a.dummy_weights)


def check_engine(spec: EngineSpec) -> None:
    """The engine section's rules across its fields: an endpoint's URL (and no nice), the
    parallel layout, a lock only for a Python engine, https settings only for https, no
    secret in args or env, no flag the kit sets itself, speculation in one place."""
    starts = adapter(spec.kind).starts_process
    if not starts and not spec.base_url:
        raise ValueError(f"engine.kind {spec.kind} needs engine.base_url")
    if not starts and spec.nice:
        raise ValueError("engine.nice: the kit starts no process for an endpoint")
    check_engine_parallel(spec.kind, spec.parallel)
    if spec.lock is not None and not adapter(spec.kind).python_program:
        raise ValueError(f"engine.lock: {adapter(spec.kind).label} is no Python "
                         "environment the kit can hold to a lock file")
    if spec.base_url is not None and not spec.base_url.startswith(("http://", "https://")):
        raise ValueError("engine.base_url must start with http:// or https://")
    if (spec.ca_bundle is not None or spec.insecure) and not (
            spec.base_url or "").startswith("https://"):
        raise ValueError("engine.ca_bundle and engine.insecure are for an https:// "
                         "engine.base_url")
    for flag, value in zip(spec.args, spec.args[1:], strict=False):
        if flag in SECRET_FLAGS and not is_env_ref(value):
            raise ValueError(f"engine.args: write {flag} ${{NAME}} and export NAME; a "
                             "secret's value never goes into a recipe")
    for arg in spec.args:
        name, eq, value = arg.partition("=")
        if eq and name in SECRET_FLAGS and not is_env_ref(value):
            raise ValueError(f"engine.args: write {name}=${{NAME}} and export NAME")
    if any(is_secret_name(k) for k in spec.env):
        raise ValueError("engine.env must not hold secrets; name the variable in "
                         "api_key_env / model.hf_token_env and export it instead")
    given = {a.split("=", 1)[0] for a in spec.args}
    reserved = adapter(spec.kind).reserved_flags
    for flag in sorted(given & set(reserved)):
        raise ValueError(f"engine.args: {reserved[flag]}")
    if spec.speculative.on and SPECULATIVE_FLAGS & given:
        raise ValueError("engine.args: the speculative setting goes in speculative "
                         "(method, k, draft_model, options), not in args as well")


def plan_engine_settings(plan: dict[str, Any]) -> dict[str, Any]:
    """``plan.engine: KIND``, the engine whose own report the plan adds, becomes that
    engine's plan settings (its adapter's ``plan_settings``; given settings win)."""
    if "engine" not in plan:
        return plan
    kind = plan["engine"]
    if kind not in PLANNED_KINDS:
        raise ValueError(f"plan.engine: one of {', '.join(PLANNED_KINDS)} (got {kind!r})")
    off = {key: False for a in ADAPTERS.values() for key in a.plan_settings}
    rest = {key: value for key, value in plan.items() if key != "engine"}
    return off | dict(adapter(kind).plan_settings) | rest


def check_plan_keys(recipe: Recipe) -> None:
    """``plan`` holds only what PlanConfig takes, and never the model (the recipe's own)."""
    from benchlib.memory import PlanConfig

    if "model" in recipe.plan:
        raise ValueError("plan.model is not a setting: the plan reads the model's "
                         "config.json from model.local_path or the hub")
    try:
        PlanConfig(model=Path("config.json"), **recipe.plan)
    except ValidationError as exc:
        raise ValueError(validation_message(exc, prefix="plan.")) from None


def check_unique_names(recipe: Recipe) -> None:
    """No two scenarios, and no two variants, share a name."""
    names = [s.name for s in recipe.scenarios]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"scenario names must be unique: {', '.join(dupes)}")
    variants = [v.name for v in recipe.variants]
    dupes = sorted({n for n in variants if variants.count(n) > 1})
    if dupes:
        raise ValueError(f"variant names must be unique: {', '.join(dupes)}")


def check_assumed(recipe: Recipe) -> None:
    """Each assumption names a field, scenario or variant the recipe has."""
    check_assumptions(recipe.assumptions, [s.name for s in recipe.scenarios],
                      [v.name for v in recipe.variants], type(recipe).model_fields)


def check_dummy_weights(recipe: Recipe) -> None:
    """Dummy weights only where the variant's engine makes them."""
    for name, r in recipe.variant_recipes():
        if r.model.weights == "dummy" and r.engine.kind not in DUMMY_WEIGHT_ENGINES:
            where = f"variants[{name}]" if name else "model"
            raise ValueError(f"{where}: weights dummy needs an engine that makes them "
                             f"({', '.join(DUMMY_WEIGHT_ENGINES)}: --load-format dummy), "
                             f"not {r.engine.kind}")


def check_steps(recipe: Recipe) -> None:
    """A run that measures has something to measure."""
    if not recipe.scenarios and "03_measure" in recipe.steps:
        raise ValueError("scenarios: at least one, unless steps leaves out 03_measure "
                         "(a start-only run: the engine started, its memory report and "
                         "/metrics read, stopped)")


def check_machine_layout(recipe: Recipe) -> None:
    """Every engine's parallel layout against the machines the hardware section names."""
    check_machines(recipe.hardware, [("engine", recipe.engine)] + [
        (f"variants[{i}].engine", v.engine) for i, v in enumerate(recipe.variants) if v.engine])


def check_comparable_variants(recipe: Recipe) -> None:
    """The variants differ only in what compare.differences allows (the fair-A/B rules)."""
    check_comparable(recipe.variant_recipes(), recipe.compare.differences)
