"""``02_launch``: what the runner's launch did — the command, the startup time, what the
engine's log says — and one real token from the engine. The runner starts the engine
before this step (its own process group, log in the run folder) and passes how that went;
the recipe's functional checks (a chat, thinking on and off, a tool-call round trip) run here
through the ``openai`` SDK, on chat recipes; and the memory plan, computed for this engine's
settings, is set beside what the engine reports allocating (its log, its ``/metrics``), a
difference above 2 % flagged (:mod:`._engine_vs_plan`). A notebook run on its own probes
``base_url`` (else the recipe's endpoint, else a scripted server it starts)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchlib._secrets import env_secret
from benchlib.adapters import adapter
from benchlib.checks import read_chat_template, run_checks
from benchlib.engines import EngineError, first_token, parse_engine_log
from benchlib.pipeline._declare import Param, RunFacts, Step, StepInputs
from benchlib.pipeline._fairness import probe_engine, tokenizer_dir
from benchlib.pipeline._sidecar import Params
from benchlib.pipeline._standalone import endpoint, results_file, step_folder, url_context
from benchlib.pipeline.steps._cache_config import scrape_cache_config
from benchlib.pipeline.steps._engine_vs_plan import compare_engine_to_plan, flagged_lines
from benchlib.recipe import Recipe
from benchlib.runs import STEP_LAUNCH, LaunchResult, save_results

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BASE_URL", "STEP", "launch_summary", "plan_vs_engine_table"]

BASE_URL = Param(name="base_url", type="str", default="",
                 help="the engine's URL; '': the recipe's endpoint, else a scripted server "
                      "started for this step")



def launch_summary(recipe: Recipe, *, base_url: str = "", engine_log: str = "",
                   command: str = "", startup_s: float | None = None, launch_error: str = "",
                   results_path: str | Path = "", run_dir: str | Path = "",
                   model_path: str | Path = "") -> LaunchResult:
    """What the launch did, a fresh 1-token check, and the fair-A/B probe
    (:func:`~benchlib.pipeline._fairness.probe_engine`).

    Raises :class:`EngineError` (with the log's hints) when the runner could not start it.
    """
    text = Path(engine_log).read_text(encoding="utf-8", errors="replace") if engine_log else ""
    facts = parse_engine_log(text)
    if launch_error:
        raise EngineError(launch_error, "\n".join(text.splitlines()[-30:]),
                          [f"{f.name}: {f.hint}" for f in facts.failures])
    api_key = env_secret(recipe.engine.api_key_env)
    chat = all(s.endpoint == "chat" for s in recipe.scenarios)
    with endpoint(recipe, base_url) as url:
        context = url_context(recipe, url)
        problem = first_token(url, recipe.model.served_model_name, chat=chat,
                              api_key=api_key, context=context)
        if problem is not None:
            raise EngineError(f"the engine at {url} did not answer a 1-token request: "
                              f"{problem}")
        probes = probe_engine(recipe, url, tokenizer=tokenizer_dir(recipe, model_path),
                              api_key=api_key)
        # chat checks where the recipe streams chat or asks for thinking or tools
        wanted = any(s.endpoint == "chat" for s in recipe.scenarios) or (
            recipe.checks.thinking or recipe.checks.tool_call)
        template = read_chat_template(
            args=recipe.engine.args, model_file=Path(model_path) if model_path else None,
            tokenizer=tokenizer_dir(recipe, model_path)) if wanted else None
        checks = run_checks(url, recipe.model.served_model_name, recipe.checks,
                            api_key=api_key, verify=context or True,
                            chat_template=template) if wanted else []
        cache_config, scrape_error = scrape_cache_config(url, api_key, context=context) \
            if adapter(recipe.engine.kind).reports_cache_config else ({}, None)
    vs_plan = compare_engine_to_plan(recipe, Path(model_path) if model_path else None,
                                     facts.as_dict(), log_text=text, cache_config=cache_config)
    if scrape_error:
        print(f"plan vs engine: {scrape_error} (the KV blocks are not compared)", flush=True)
    for p in probes:
        print(f"probe {p.endpoint}: prompt {p.prompt_tokens} tokens, {p.output_tokens} of "
              f"{p.max_tokens} out ({p.output_tokens_source}){' — ' + p.error if p.error else ''}",
              flush=True)
    for c in checks:
        said = f" — answer: {c.answer.strip()[:120]!r}" if c.answer.strip() else ""
        status = "NOT OK" if c.status == "not ok" else c.status
        print(f"check {c.name} (openai SDK): {status} in {c.seconds:.2f} s — "
              f"{c.error or c.note}{said}", flush=True)
    for line in flagged_lines(vs_plan):
        print(line, flush=True)
    result = LaunchResult(kind=recipe.engine.kind, base_url=url, command=command,
                          startup_s=startup_s, engine_log=engine_log,
                          log_facts=facts.as_dict(), probe=probes, checks=checks,
                          plan_vs_engine=vs_plan)
    folder = step_folder(run_dir, recipe, scratch=False)
    save_results(results_file(results_path, folder, STEP.name), result)
    return result


def plan_vs_engine_table(launch: LaunchResult) -> pd.DataFrame | str:
    """The plan against the live engine, one row per figure (or why there is none)."""
    import pandas as pd

    vs = launch.plan_vs_engine
    if vs.skipped or not vs.rows:
        return f"plan vs engine: not compared ({vs.skipped or 'no figures'})"
    return pd.DataFrame([r.model_dump(exclude={"advice"}) for r in vs.rows])


def _bind(inputs: StepInputs) -> Params:
    engine = inputs.engine
    return {"base_url": engine.base_url, "engine_log": engine.log_name,
            "command": engine.command, "startup_s": engine.startup_s,
            "launch_error": engine.launch_error, "model_path": str(inputs.model_path or "")}


def _apply(result: LaunchResult, facts: RunFacts) -> RunFacts:
    return facts.model_copy(update={"probe": result.probe})


STEP = Step[LaunchResult](
    name=STEP_LAUNCH.name, title="02 · Launch",
    about="The runner started the engine (its own process group, log in the run folder) and "
          "waited for it; here: the command, the startup time, what the log says, and one "
          "real token. On its own, the notebook probes `base_url` (or the recipe's endpoint, "
          "or a scripted server it starts).",
    engine="start",
    params=(BASE_URL,
            Param(name="engine_log", type="str", default="",
                  help="the engine's log, relative to the run folder; '': none"),
            Param(name="command", type="str", default="",
                  help="the command the runner started, secrets redacted"),
            Param(name="startup_s", type="Optional[float]", default=None,
                  help="seconds the engine took to become ready"),
            Param(name="launch_error", type="str", default="",
                  help="why the runner could not start the engine; '': it did"),
            Param(name="model_path", type="str", default="",
                  help="the model folder (the probe's tokenizer); '': the recipe's")),
    result=LaunchResult,
    cells=("launch = bp.launch_summary(recipe, base_url=base_url, engine_log=engine_log,\n"
           "                           command=command, startup_s=startup_s,\n"
           "                           launch_error=launch_error, results_path=results_path,\n"
           "                           run_dir=run_dir, model_path=model_path)\n"
           'print(launch.command)\nprint(f"ready after {launch.startup_s} s")',
           "launch.log_facts",
           "bp.plan_vs_engine_table(launch)"),
    bind=_bind, apply=_apply)
