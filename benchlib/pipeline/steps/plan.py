"""``00_plan``: will it fit, before anything is downloaded — the memory plan (weights, KV
bytes per token, KV capacity, max concurrency, decode floor, verdict) from the recipe's
``plan`` settings, and the scenarios the recipe will run."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from benchlib._secrets import env_secret
from benchlib.adapters import adapter
from benchlib.pipeline._chart import Chart
from benchlib.pipeline._declare import Step
from benchlib.pipeline._standalone import results_file, step_folder
from benchlib.recipe import Recipe
from benchlib.runs import STEP_PLAN, PlanNumbers, PlanResult, PlanRow, save_results

if TYPE_CHECKING:
    import pandas as pd

    from benchlib.memory import Plan

__all__ = ["STEP", "plan_charts", "plan_overview", "plan_rows", "plan_step", "plan_table"]



def plan_rows(recipe: Recipe) -> list[PlanRow]:
    """The scenarios to run: one row per scenario × concurrency."""
    return [PlanRow(scenario=s.name, endpoint=s.endpoint, input_len=s.input_len,
                    output_len=s.output_len, concurrency=c, num_prompts=s.prompts_at(i),
                    tokens_needed=s.input_len + s.output_len)
            for s in recipe.scenarios for i, c in enumerate(s.concurrencies)]


def plan_overview(recipe: Recipe) -> pd.DataFrame:
    """The scenarios to run, as a table."""
    import pandas as pd

    return pd.DataFrame([r.model_dump() for r in plan_rows(recipe)])


def _config_json(recipe: Recipe) -> Path | None:
    """The model's config.json: the local folder's, or the pinned revision's fetched alone
    from the hub (kilobytes), so the plan comes before the download."""
    spec = recipe.model
    if spec.local_path is not None:
        path = spec.local_path
        if path.is_file() and path.suffix == ".gguf":
            return path
        return path if (path / "config.json").is_file() else None
    from huggingface_hub import hf_hub_download

    token = env_secret(spec.hf_token_env)
    config = Path(hf_hub_download(spec.id, "config.json", revision=spec.revision, token=token))
    with contextlib.suppress(Exception):  # optional: exact parameter count when present
        hf_hub_download(spec.id, "model.safetensors.index.json", revision=spec.revision,
                        token=token)
    return config.parent


def plan_step(recipe: Recipe, results_path: str | Path = "", *, run_dir: str | Path = ""
              ) -> tuple[Plan | None, pd.DataFrame]:
    """The memory plan and the scenarios table. Scenarios whose requests exceed
    max_model_len are named in ``warnings``; without a config.json (a GGUF repo) the plan
    is skipped and says so. Saved to ``results_path`` (else ``run_dir``'s results file)."""
    from benchlib.memory import PlanConfig, plan

    scenarios = plan_overview(recipe)
    try:
        config = _config_json(recipe)
    except Exception as exc:  # e.g. a hub GGUF repo has no config.json: plan skipped, said why
        config = None
        print(f"no config.json for {recipe.model.id}: {type(exc).__name__}: {exc}", flush=True)
    limit = recipe.plan.get("max_model_len") or recipe.engine.max_model_len
    too_long = [] if limit is None else sorted(
        {s.name for s in recipe.scenarios
         if max([s.input_len, *s.ramp_input_lens]) + s.output_len > limit})
    warnings = [f"scenarios {', '.join(too_long)} need more than max_model_len={limit} tokens "
                "per request: the engine will refuse them"] if too_long else []
    for warning in warnings:
        print(warning, flush=True)
    the_plan = None
    if config is not None:
        settings = {"max_model_len": recipe.engine.max_model_len, **recipe.plan}
        for key, value in adapter(recipe.engine.kind).plan_settings.items():
            settings.setdefault(key, value)  # the plan also says what the engine will report
        the_plan = plan(PlanConfig(model=config, **settings))
    result = PlanResult(scenarios=plan_rows(recipe), warnings=warnings,
                        plan=PlanNumbers.model_validate(the_plan.summary()) if the_plan
                        else None,
                        plan_skipped=None if the_plan else "no config.json for the model")
    folder = step_folder(run_dir, recipe, scratch=False)
    save_results(results_file(results_path, folder, STEP.name), result)
    return the_plan, scenarios


def plan_table(the_plan: Plan | None) -> pd.Series:
    """The plan's numbers, one per row (what `benchlib plan --json` prints)."""
    import pandas as pd

    if the_plan is None:
        return pd.Series({"plan": "skipped: no config.json for the model"})
    return pd.Series(the_plan.summary())


def plan_charts(the_plan: Plan | None) -> list[Chart]:
    """The memory stack per GPU, and concurrency / KV tokens against max_model_len."""
    from benchlib.memory import plan_figures

    return [] if the_plan is None else [Chart(f) for f in plan_figures(the_plan)]


STEP = Step[PlanResult](
    name=STEP_PLAN.name, title="00 · Plan",
    about="Will it fit, before anything is downloaded: weights, KV bytes per token, KV "
          "capacity, max concurrency and the decode floor (`benchlib plan`), then the "
          "scenarios this recipe will run.",
    result=PlanResult,
    cells=("plan, scenarios = bp.plan_step(recipe, results_path, run_dir=run_dir)\n"
           "bp.plan_table(plan)",
           "display(*bp.plan_charts(plan))",
           "scenarios"))
