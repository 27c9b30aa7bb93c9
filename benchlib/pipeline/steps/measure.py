"""``03_measure``: every scenario at every concurrency (or, for a long-context ramp, one
request per input length until one fails), in order, each result saved as it finishes.

Each measurement keeps the engine's peak KV use (``/metrics``) beside what the plan expects
of it (``kv_usage_vs_plan``: concurrency × tokens per request over the plan's capacity, from
02_launch's plan against the engine) — shown, not flagged: 02_launch flags a capacity that
differs. Each also keeps the energy of the engine's devices over the scenario, beside an idle
window measured just before it (``energy``: NVML for GPUs, RAPL for CPUs, or the reason
neither could be read; see :mod:`benchlib.pipeline.steps._energy`). A resumed run measures
again only what is not done (see
:mod:`benchlib.pipeline._resume`);
when the engine stops answering after a scenario, that is recorded under ``engine_lost``
and the remaining scenarios are not attempted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib._exceptions import BenchlibError
from benchlib._secrets import env_secret
from benchlib.checks import SdkView, sdk_view
from benchlib.energy import EnergyResult
from benchlib.engines import http_ok
from benchlib.measure import (
    MeasureResult,
    measure,
    planned_requests,
    ramp_seed,
)
from benchlib.pipeline._declare import Param, Step, StepInputs
from benchlib.pipeline._fairness import tokenizer_dir
from benchlib.pipeline._resume import ramp_done, scenario_done, scenario_problem
from benchlib.pipeline._sidecar import Params
from benchlib.pipeline._standalone import (
    endpoint,
    results_file,
    step_folder,
    tls_options,
    url_context,
)
from benchlib.pipeline.steps._accuracy import run_accuracy
from benchlib.pipeline.steps._energy import start_energy
from benchlib.pipeline.steps._engine_vs_plan import kv_usage_expected, prefix_unit
from benchlib.pipeline.steps._server import sampler_for, server_side
from benchlib.pipeline.steps.launch import BASE_URL
from benchlib.recipe import Recipe, Scenario
from benchlib.runs import (
    STEP_LAUNCH,
    STEP_MEASURE,
    EngineLost,
    KvVsPlan,
    LaunchResult,
    Measurement,
    MeasureStep,
    Ramp,
    RampStep,
    RunFolder,
    save_results,
    summary_table,
    whole,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["STEP", "Measured", "measure_scenarios"]


#: per-request arrays stay in the measure JSON; the results keep the aggregates
_BULKY = ("input_lens", "output_lens", "ttfts", "itls", "errors", "latencies", "start_times",
          "queue_times", "generated_texts")


@dataclass(frozen=True)
class Measured:
    """What a measure step produced: its summary table, and the run folder it wrote to."""

    table: pd.DataFrame
    folder: RunFolder


def _measure_once(recipe: Recipe, s: Scenario, base_url: str, result_json: Path,
                  tokenizer: Path | None, api_key: str | None,
                  on_warmed: Callable[[], None] | None = None, once: bool = False,
                  unit: tuple[int, str] | None = None, **shape: Any) -> MeasureResult:
    """The one place :func:`benchlib.measure.measure` is called. ``once``: one run whatever
    the scenario's ``repeats`` (a ramp's step); ``unit``: the engine's prefix-cache unit."""
    if once:
        s = s.model_copy(update={"repeats": 1})
    cfg = s.measure_config(base_url=base_url, model=recipe.model.served_model_name,
                           tokenizer=tokenizer, result_json=result_json, **shape,
                           **tls_options(recipe, base_url))
    if unit is not None:
        cfg = cfg.with_prefix_unit(*unit)
    return measure(cfg, api_key=api_key, on_warmed=on_warmed)


def _sdk(recipe: Recipe, s: Scenario, url: str, tokenizer: Path | None, api_key: str | None,
         wire: Measurement, conc: int, index: int) -> SdkView:
    """The scenario at ``conc`` through the openai SDK, beside the wire run ``wire``."""
    cfg = s.measure_config(base_url=url, model=recipe.model.served_model_name,
                           tokenizer=tokenizer, result_json=None, max_concurrency=conc,
                           num_prompts=s.prompts_at(index), input_len=s.input_len,
                           seed=s.seed_at(index), **tls_options(recipe, url))
    view = sdk_view(cfg, api_key, wire.model_dump(exclude_unset=True))
    print(f"  through the openai SDK ({view.client}): median TTFT "
          f"{_ms(view.median_ttft_ms, 1)} ({_ms(view.ttft_overhead_ms, 2)} over the wire), "
          f"TPOT {_ms(view.median_tpot_ms, 2)} ({_ms(view.tpot_overhead_ms, 3)} over)",
          flush=True)
    return view


def _alive(recipe: Recipe, base_url: str, api_key: str | None) -> bool:
    """Whether the engine still answers (three tries, so one slow answer is not a death)."""
    url = base_url.rstrip("/") + recipe.engine.ready_path
    context = url_context(recipe, base_url)
    for _ in range(3):
        if http_ok(url, timeout=10.0, api_key=api_key, context=context):
            return True
        time.sleep(1.0)
    return False


def _ms(value: float | None, digits: int) -> str:
    """A metric for a progress line: ``n/a`` where the set was empty (no request succeeded)."""
    return "n/a" if value is None else f"{value:.{digits}f} ms"


def _energy_line(energy: EnergyResult | None, said: set[str]) -> None:
    """A progress line of the measurement's energy; a reason there is none, once."""
    if energy is None or energy.energy_j is None:
        why = ((energy.reason or "; ".join(energy.flags)) if energy else "") or "not measured"
        if why not in said:
            said.add(why)
            print(f"  energy: none ({why})", flush=True)
        return
    per_token = energy.energy_j_per_output_token
    print(f"  energy: {energy.energy_j:.1f} J"
          + (f", {per_token:.4g} J per output token" if per_token is not None else "")
          + f", mean {_w(energy.avg_power_w)} (peak {_w(energy.peak_power_w)}, "
          f"idle {_w(energy.idle_power_w)}, included) from {energy.source} over "
          f"{len(energy.devices)} device(s)"
          + (f"; {len(energy.flags)} flag(s)" if energy.flags else ""), flush=True)


def _w(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} W"


def _kv_vs_plan(launch: LaunchResult | None, s: Scenario, conc: int,
                m: Measurement) -> KvVsPlan | None:
    """The engine's peak KV use beside the plan's expectation, with a progress line (none
    for a trace or conversations: their lengths are not the scenario's input_len)."""
    kv = None if launch is None or s.dataset in ("trace", "conversations") else \
        kv_usage_expected(launch.plan_vs_engine, s, conc)
    if kv is None:
        return None
    peak = m.server_metrics.kv_cache_usage_peak if m.server_metrics else None
    kv = kv.model_copy(update={"peak": peak})
    seen = "not exposed by this engine's /metrics" if peak is None else f"{100 * peak:.2f} %"
    differs = " — the engine's capacity differs from the plan's (see 02_launch)" \
        if kv.capacity_flagged else ""
    print(f"  KV use: peak {seen}; the plan expects {100 * kv.expected:.2f} % "
          f"({conc} × {kv.tokens_per_request:,} tokens of {kv.capacity_tokens:,})"
          f"{differs}", flush=True)
    return kv


def _earlier(saved_to: Path | str, force: bool) -> MeasureStep:
    """An earlier attempt's results to go on from (none with ``force``)."""
    path = Path(saved_to)
    if force or not str(saved_to) or not path.is_file():
        return MeasureStep()
    return MeasureStep.model_validate_json(path.read_text(encoding="utf-8"))


def measure_scenarios(recipe: Recipe, *, base_url: str = "", run_dir: str | Path = "",
                      results_path: str | Path = "", model_path: str | Path = "",
                      force: bool = False) -> Measured:
    """Measure every scenario not done in ``results_path`` (unless ``force``); a ramp cut
    short goes on from its last completed length. Raises (so the step is marked failed, its
    results kept, and a resume measures again what is not done) when the engine was lost or
    a scenario is not done."""
    folder = step_folder(run_dir, recipe, scratch=True)
    assert folder is not None
    saved_to = results_file(results_path, folder, STEP.name)
    results = _earlier(saved_to, force)
    results.engine_lost = None
    tokenizer = tokenizer_dir(recipe, model_path)
    api_key = env_secret(recipe.engine.api_key_env)

    def save() -> None:
        save_results(saved_to, results, exclude_unset=True)

    launch = folder.result(STEP_LAUNCH)
    unit = prefix_unit(recipe, launch.plan_vs_engine if launch is not None else None)
    problems: list[str] = []
    said: set[str] = set()  # energy reasons already printed (once per step, not per row)
    with endpoint(recipe, base_url) as url:
        for s in recipe.scenarios:
            if s.ramp_input_lens:
                if ramp_done(results.ramps.get(s.name), s):
                    print(f"{s.name}/ramp: done in an earlier attempt, skipped", flush=True)
                else:
                    _ramp(recipe, s, url, folder, api_key, tokenizer, results, save)
            for i, conc in enumerate([] if s.ramp_input_lens else s.concurrencies):
                key = MeasureStep.key(s.name, conc)
                planned = planned_requests(s.dataset, s.dataset_path, s.prompts_at(i))
                if scenario_done(results.measurements.get(key), planned,
                                 s.max_failed_fraction):
                    print(f"{key}: done in an earlier attempt, skipped", flush=True)
                    continue
                shape = (f"{s.dataset} {Path(str(s.dataset_path)).name}, {planned} requests"
                         if s.dataset in ("trace", "conversations")
                         else f"{s.input_len} in / {s.output_len} out")
                print(f"{key}: {s.prompts_at(i)} prompts, {shape}", flush=True)
                result_json = folder.measure_json(s.name, conc)
                energy = start_energy(recipe, url)  # returns after its idle window
                sampler = sampler_for(recipe, url, api_key)
                try:
                    r = _measure_once(recipe, s, url, result_json, tokenizer, api_key,
                                      on_warmed=sampler.mark if sampler else None, unit=unit,
                                      max_concurrency=conc, num_prompts=s.prompts_at(i),
                                      input_len=s.input_len, seed=s.seed_at(i))
                except BaseException:
                    energy.abandon()
                    raise
                finally:
                    metrics = sampler.stop() if sampler else None
                joules = energy.finish(r, result_json)
                errors = [e for e in r.errors if e]
                # the result JSON's keys but the per-request arrays, and where it lies
                m = Measurement.model_validate({
                    **{k: v for k, v in r.to_json().items() if k not in _BULKY},
                    "scenario": s.name, "concurrency": conc, "input_len": s.input_len,
                    "output_len": s.output_len, "result_json": str(result_json),
                    "first_errors": errors[:3], "seeding": s.seeding(i)})
                if metrics is not None:
                    m.server_metrics, spec = server_side(recipe, s, result_json, metrics, conc)
                    m.server_metrics = whole(m.server_metrics)
                    if spec is not None:
                        m.speculative = whole(spec)
                kv = _kv_vs_plan(launch, s, conc, m)
                if kv is not None:
                    m.kv_usage_vs_plan = whole(kv)
                m.energy = whole(joules)
                results.measurements[key] = m
                save()
                _energy_line(m.energy, said)
                spec = m.speculative
                accept = (f", server acceptance length {spec.mean_acceptance_length:.2f}"
                          if spec and spec.mean_acceptance_length else "")
                print(f"{key}: {r.completed} ok, {r.failed} failed, median TTFT "
                      f"{_ms(r.median_ttft_ms, 1)}, TPOT {_ms(r.median_tpot_ms, 2)}"
                      f"{accept}", flush=True)
                if s.sdk_view:
                    m.sdk = whole(_sdk(recipe, s, url, tokenizer, api_key, m, conc, i))
                    save()
                problem = scenario_problem(m, planned, s.max_failed_fraction)
                if problem:
                    problems.append(f"{key}: {problem} ({', '.join(errors[:1]) or 'no error'})")
            if not _alive(recipe, url, api_key):
                lost = (f"the engine at {url} stopped answering during scenario {s.name!r}; "
                        "the scenarios after it were not run (see engine.log)")
                results.engine_lost = EngineLost(after_scenario=s.name, error=lost)
                save()
                print(lost, flush=True)
                problems.insert(0, lost)
                break
        if recipe.accuracy is not None and results.engine_lost is None:
            run_accuracy(recipe, url, folder, api_key, results, save, problems)
    ramp_failures = [f"{name}/ramp" for name, ramp in results.ramps.items()
                     if ramp.failed_at_input_len is not None]
    if problems:
        raise BenchlibError("; ".join(problems))
    if ramp_failures:
        print(f"ramps that found a limit: {', '.join(ramp_failures)} (see results)", flush=True)
    return Measured(table=summary_table(results), folder=folder)


def _ramp(recipe: Recipe, s: Scenario, base_url: str, folder: RunFolder, api_key: str | None,
          tokenizer: Path | None, results: MeasureStep, save: Callable[[], None]) -> None:
    """One request per input length, going up, until one fails: where it got and how it
    failed (the request's error, and whether the engine survived), saved under the
    scenario's ramp as it goes. An unfinished record of the same ramp (a resumed run) is
    continued after its last length."""
    earlier = results.ramps.get(s.name)
    fresh = earlier is None or earlier.failed_at_input_len is not None \
        or earlier.input_lens != list(s.ramp_input_lens)
    record = Ramp(scenario=s.name, kind="ramp", endpoint=s.endpoint,
                  input_lens=list(s.ramp_input_lens), steps=[], max_completed_input_len=None,
                  failed_at_input_len=None, error=None, engine_alive_after=True) \
        if fresh or earlier is None else earlier
    results.ramps[s.name] = record
    reached = record.max_completed_input_len or 0
    for j, n in enumerate(s.ramp_input_lens):
        if n <= reached:
            continue
        print(f"{s.name}/ramp: input {n} tokens", flush=True)
        # no warmup: the one request at each length is the test; its own seed, so it does
        # not begin with the shorter one's prompt (a prefix-cache hit)
        r = _measure_once(recipe, s, base_url, folder.ramp_json(s.name, n), tokenizer,
                          api_key, max_concurrency=1, num_prompts=1, input_len=n,
                          num_warmups=0, seed=ramp_seed(s.seed, j), once=True)
        ok = r.completed == 1
        record.steps.append(RampStep(input_len=n, ok=ok,
                                     ttft_ms=r.median_ttft_ms if ok else None,
                                     tpot_ms=r.median_tpot_ms if ok else None,
                                     error=r.errors[0] if not ok else ""))
        if ok:
            record.max_completed_input_len = n
            save()
            continue
        record.failed_at_input_len = n
        record.error = r.errors[0]
        record.engine_alive_after = _alive(recipe, base_url, api_key)
        print(f"{s.name}/ramp: failed at {n} tokens: {record.error} (engine "
              f"{'still up' if record.engine_alive_after else 'gone'})", flush=True)
        break
    save()


def _bind(inputs: StepInputs) -> Params:
    return {"base_url": inputs.engine.base_url,
            "model_path": str(inputs.model_path or "")}


STEP = Step[MeasureStep](
    name=STEP_MEASURE.name, title="03 · Measure",
    about="Every scenario at every concurrency, with `vllm bench serve`'s definitions and "
          "the wire's accuracy; each result is saved as it finishes. On its own, the "
          "notebook measures `base_url` (or the recipe's endpoint, or a scripted server it "
          "starts) into a new folder under `outputs/notebooks/`.",
    engine="ready", requires=(STEP_LAUNCH.name,),
    params=(BASE_URL,
            Param(name="model_path", type="str", default="",
                  help="the model folder (the prompts' tokenizer); '': the recipe's")),
    result=MeasureStep,
    cells=("measured = bp.measure_scenarios(recipe, base_url=base_url, run_dir=run_dir,\n"
           "                                results_path=results_path, "
           "model_path=model_path)\nmeasured.table",
           "bp.measure_figure(measured.table, save_to=measured.folder.summary_png)"),
    bind=_bind)
