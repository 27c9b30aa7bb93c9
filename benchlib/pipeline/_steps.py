"""The work behind each notebook, so that a notebook cell reads like a sentence.

``00_plan`` → :func:`plan_overview`; ``01_download`` → :func:`download_model`;
``02_launch`` → :func:`launch_summary`; ``03_measure`` → :func:`measure_scenarios` and
:func:`measure_figure`; ``04_compare`` → :func:`compare_runs`. Each step's results go to the
``results_path`` the runner gives it (:func:`save_results`), written as they accrue, and the
runner copies them into the step's sidecar.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib._exceptions import BenchlibError, UsageError
from benchlib.engines import EngineError, first_token, http_ok, parse_engine_log
from benchlib.measure import MeasureConfig, measure
from benchlib.pipeline._paths import load_recipe_snapshot
from benchlib.pipeline._resume import ramp_done, scenario_done, scenario_problem
from benchlib.provenance import hash_model_folder
from benchlib.recipe import Recipe, Scenario

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from benchlib.memory import Plan

__all__ = [
    "Chart",
    "compare_runs",
    "download_model",
    "launch_summary",
    "load",
    "measure_figure",
    "measure_scenarios",
    "plan_charts",
    "plan_overview",
    "plan_step",
    "plan_table",
    "save_results",
    "summary_table",
]

#: per-request arrays stay in the measure JSON; the sidecar keeps the aggregates
_BULKY = ("input_lens", "output_lens", "ttfts", "itls", "errors", "latencies", "start_times",
          "queue_times", "generated_texts")
TABLE_COLUMNS = ["scenario", "endpoint", "input_len", "output_len", "concurrency", "completed",
                 "failed", "median_ttft_ms", "median_ttft_text_ms", "p99_ttft_ms",
                 "median_tpot_ms", "p99_tpot_ms",
                 "median_itl_ms", "median_e2el_ms", "output_throughput", "per_user_tok_s",
                 "mean_tokens_per_chunk"]


def load(recipe_path: str | Path) -> Recipe:
    """The run's recipe snapshot as the runner wrote it, every path absolute."""
    return load_recipe_snapshot(recipe_path)


def save_results(results_path: str | Path, results: dict[str, Any]) -> None:
    """Write a step's results now (atomically), so a later failure keeps them."""
    if not results_path:
        return
    path = Path(results_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=2, default=str, allow_nan=False) + "\n",
                   encoding="utf-8")
    tmp.replace(path)


def _read_results(results_path: str | Path) -> dict[str, Any]:
    path = Path(results_path)
    if results_path and path.is_file():
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    return {}


# ---------------------------------------------------------------- 00_plan
def plan_overview(recipe: Recipe) -> pd.DataFrame:
    """The scenarios to run: one row per scenario × concurrency."""
    import pandas as pd

    rows = []
    for s in recipe.scenarios:
        for i, c in enumerate(s.concurrencies):
            rows.append({"scenario": s.name, "endpoint": s.endpoint, "input_len": s.input_len,
                         "output_len": s.output_len, "concurrency": c,
                         "num_prompts": s.prompts_at(i),
                         "tokens_needed": s.input_len + s.output_len})
    return pd.DataFrame(rows)


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

    token = os.environ.get(spec.hf_token_env) if spec.hf_token_env else None
    config = Path(hf_hub_download(spec.id, "config.json", revision=spec.revision, token=token))
    with contextlib.suppress(Exception):  # optional: exact parameter count when present
        hf_hub_download(spec.id, "model.safetensors.index.json", revision=spec.revision,
                        token=token)
    return config.parent


def plan_step(recipe: Recipe, results_path: str | Path = "") -> tuple[Plan | None,
                                                                       pd.DataFrame]:
    """The memory plan (weights, KV bytes per token, capacity, concurrency, decode floor,
    verdict) from the recipe's ``plan`` settings, and the scenarios table. Scenarios whose
    requests exceed max_model_len are named in ``warnings``; without a config.json (a GGUF
    repo) the plan is skipped and says so."""
    from benchlib.memory import PlanConfig, plan

    scenarios = plan_overview(recipe)
    try:
        config = _config_json(recipe)
    except Exception as exc:  # e.g. a hub GGUF repo has no config.json: plan skipped, said why
        config = None
        print(f"no config.json for {recipe.model.id}: {type(exc).__name__}: {exc}", flush=True)
    result: dict[str, Any] = {"scenarios": scenarios.to_dict("records")}
    limit = recipe.plan.get("max_model_len") or recipe.engine.max_model_len
    too_long = [] if limit is None else sorted(
        {s.name for s in recipe.scenarios
         if max([s.input_len, *s.ramp_input_lens]) + s.output_len > limit})
    if too_long:
        result["warnings"] = [f"scenarios {', '.join(too_long)} need more than "
                              f"max_model_len={limit} tokens per request: the engine will "
                              "refuse them"]
        print(result["warnings"][0], flush=True)
    the_plan = None
    if config is None:
        result["plan"] = None
        result["plan_skipped"] = "no config.json for the model"
    else:
        settings = {"max_model_len": recipe.engine.max_model_len, **recipe.plan}
        the_plan = plan(PlanConfig(model=config, **settings))
        result["plan"] = the_plan.summary()
    save_results(results_path, result)
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


# ---------------------------------------------------------------- 01_download
def download_model(recipe: Recipe, results_path: str | Path = "") -> dict[str, Any]:
    """Fetch the pinned snapshot from the hub (disk space checked first), or verify a local
    folder; record the resolved commit and a content hash of the files."""
    spec = recipe.model
    if spec.local_path is not None:
        path = spec.local_path
        if not (path / "config.json").is_file() and not any(path.glob("*.gguf")):
            raise UsageError("model.local_path", f"{path} holds no config.json or .gguf file")
        result: dict[str, Any] = {"source": "local", "model_path": str(path),
                                  "revision": spec.revision, "resolved_revision": None}
    else:
        from huggingface_hub import HfApi, snapshot_download
        from huggingface_hub.constants import HF_HUB_CACHE
        from huggingface_hub.utils._paths import filter_repo_objects

        token = os.environ.get(spec.hf_token_env) if spec.hf_token_env else None
        info = HfApi().model_info(spec.id, revision=spec.revision, files_metadata=True,
                                  token=token)
        wanted = list(filter_repo_objects(info.siblings or [], key=lambda f: f.rfilename,
                                          allow_patterns=spec.include or None,
                                          ignore_patterns=spec.exclude or None))
        need = sum((f.size or 0) for f in wanted)
        cache = Path(HF_HUB_CACHE)
        while not cache.exists():
            cache = cache.parent
        free = shutil.disk_usage(cache).free
        print(f"{spec.id}@{info.sha}: {len(wanted)} files, {need / 2**30:.2f} GiB; "
              f"{free / 2**30:.1f} GiB free in {cache}", flush=True)
        if need > free:
            raise BenchlibError(f"{spec.id}@{info.sha} needs {need / 2**30:.1f} GiB, only "
                                f"{free / 2**30:.1f} GiB free in {cache}: narrow "
                                "model.include / model.exclude or free disk space")
        path = Path(snapshot_download(spec.id, revision=info.sha, token=token,
                                      allow_patterns=spec.include or None,
                                      ignore_patterns=spec.exclude or None))
        result = {"source": "hub", "model_path": str(path), "revision": spec.revision,
                  "resolved_revision": info.sha}
    result["files_hash"] = hash_model_folder(path).model_dump()
    save_results(results_path, result)
    return result


# ---------------------------------------------------------------- 02_launch
def launch_summary(recipe: Recipe, *, base_url: str, engine_log: str, command: str,
                   startup_s: float | None, launch_error: str,
                   results_path: str | Path = "") -> dict[str, Any]:
    """What the launch did: command, startup time, the log's facts; a fresh 1-token probe.

    Raises :class:`EngineError` (with the log's hints) when the runner could not start it.
    """
    text = Path(engine_log).read_text(encoding="utf-8", errors="replace") if engine_log else ""
    facts = parse_engine_log(text)
    if launch_error:
        raise EngineError(launch_error, "\n".join(text.splitlines()[-30:]),
                          [f"{f.name}: {f.hint}" for f in facts.failures])
    api_key = (os.environ.get(recipe.engine.api_key_env) if recipe.engine.api_key_env
               else None)
    chat = all(s.endpoint == "chat" for s in recipe.scenarios)
    probe = first_token(base_url, recipe.model.served_model_name, chat=chat, api_key=api_key)
    if probe is not None:
        raise EngineError(f"the engine at {base_url} did not answer a 1-token request: {probe}")
    result = {"kind": recipe.engine.kind, "base_url": base_url, "command": command,
              "startup_s": startup_s, "engine_log": engine_log, "log_facts": facts.as_dict()}
    save_results(results_path, result)
    return result


# ---------------------------------------------------------------- 03_measure
def measure_scenarios(recipe: Recipe, *, base_url: str, run_dir: str | Path,
                      results_path: str | Path = "", model_path: str | Path = "",
                      force: bool = False) -> pd.DataFrame:
    """Every scenario at every concurrency, in order; each result saved as it finishes.

    A scenario/concurrency or ramp already done in ``results_path`` (a resumed run; see
    :mod:`benchlib.pipeline._resume` for what done means) is not measured again unless
    ``force``; a ramp cut short goes on from the last length that completed. When the
    engine stops answering after a scenario (it crashed), that is recorded under
    ``engine_lost`` and the remaining scenarios are not attempted. Returns the summary
    table; raises (so the step is marked failed, its results kept, and a resume measures
    again what is not done) when the engine was lost or a scenario is not done.
    """
    results = {} if force else _read_results(results_path)
    results.pop("engine_lost", None)
    tokenizer = _tokenizer_dir(recipe, model_path)
    api_key = (os.environ.get(recipe.engine.api_key_env) if recipe.engine.api_key_env
               else None)
    out_dir = Path(run_dir) / "measure"

    def keep(key: str, record: dict[str, Any]) -> None:
        results[key] = record
        save_results(results_path, results)

    problems: list[str] = []
    for s in recipe.scenarios:
        if s.ramp_input_lens:
            key = f"{s.name}/ramp"
            if ramp_done(results.get(key), s):
                print(f"{key}: done in an earlier attempt, skipped", flush=True)
            else:
                keep(key, _ramp(recipe, s, base_url, out_dir, api_key, tokenizer,
                                results.get(key), functools.partial(keep, key)))
        for i, conc in enumerate([] if s.ramp_input_lens else s.concurrencies):
            key = f"{s.name}/c{conc}"
            if scenario_done(results.get(key), s.prompts_at(i), s.max_failed_fraction):
                print(f"{key}: done in an earlier attempt, skipped", flush=True)
                continue
            print(f"{key}: {s.prompts_at(i)} prompts, {s.input_len} in / {s.output_len} out",
                  flush=True)
            r = measure(_config(recipe, s, base_url, out_dir / f"{s.name}-c{conc}.json",
                                tokenizer, max_concurrency=conc, num_prompts=s.prompts_at(i),
                                input_len=s.input_len), api_key=api_key)
            errors = [e for e in r["errors"] if e]
            keep(key, {**{k: v for k, v in r.items() if k not in _BULKY},
                       "scenario": s.name, "concurrency": conc,
                       "input_len": s.input_len, "output_len": s.output_len,
                       "result_json": str(out_dir / f"{s.name}-c{conc}.json"),
                       "first_errors": errors[:3]})
            print(f"{key}: {r['completed']} ok, {r['failed']} failed, median TTFT "
                  f"{_ms(r['median_ttft_ms'], 1)}, TPOT {_ms(r['median_tpot_ms'], 2)}",
                  flush=True)
            problem = scenario_problem(results[key], s.prompts_at(i), s.max_failed_fraction)
            if problem:
                problems.append(f"{key}: {problem} ({', '.join(errors[:1]) or 'no error'})")
        if not _alive(recipe, base_url, api_key):
            results["engine_lost"] = {"after_scenario": s.name, "error": (
                f"the engine at {base_url} stopped answering during scenario {s.name!r}; "
                "the scenarios after it were not run (see engine.log)")}
            save_results(results_path, results)
            print(results["engine_lost"]["error"], flush=True)
            problems.insert(0, results["engine_lost"]["error"])
            break
    ramp_failures = [k for k, v in results.items() if k.endswith("/ramp")
                     and v.get("failed_at_input_len") is not None]
    if problems:
        raise BenchlibError("; ".join(problems))
    if ramp_failures:
        print(f"ramps that found a limit: {', '.join(ramp_failures)} (see results)", flush=True)
    return summary_table(results)


def _tokenizer_dir(recipe: Recipe, model_path: str | Path) -> Path | None:
    """Where the prompts' tokenizer comes from: ``model.tokenizer``, else the downloaded or
    local model folder (a GGUF file has none: then ``model.tokenizer`` is needed)."""
    if recipe.model.tokenizer is not None:
        return recipe.model.tokenizer
    for candidate in (Path(model_path) if model_path else None, recipe.model.local_path):
        if candidate is not None and candidate.is_dir():
            return candidate
    return None


def _alive(recipe: Recipe, base_url: str, api_key: str | None) -> bool:
    """Whether the engine still answers (three tries, so one slow answer is not a death)."""
    url = base_url.rstrip("/") + recipe.engine.ready_path
    for _ in range(3):
        if http_ok(url, timeout=10.0, api_key=api_key):
            return True
        time.sleep(1.0)
    return False


def _config(recipe: Recipe, s: Scenario, base_url: str, result_json: Path,
            tokenizer: Path | None, *, max_concurrency: int, num_prompts: int, input_len: int,
            num_warmups: int | None = None) -> MeasureConfig:
    return MeasureConfig(
        base_url=base_url, model=recipe.model.served_model_name, endpoint=s.endpoint,
        dataset=s.dataset, dataset_path=s.dataset_path, input_len=input_len,
        output_len=s.output_len, random_range_ratio=s.random_range_ratio,
        num_prompts=num_prompts, max_concurrency=max_concurrency, request_rate=s.request_rate,
        burstiness=s.burstiness,
        num_warmups=s.num_warmups if num_warmups is None else num_warmups,
        request_timeout=s.request_timeout_s,
        ignore_eos=s.ignore_eos, tokenizer=tokenizer, seed=0, disable_tqdm=True,
        result_json=result_json, sampling=dict(s.sampling))


def _ramp(recipe: Recipe, s: Scenario, base_url: str, out_dir: Path, api_key: str | None,
          tokenizer: Path | None, earlier: Any,
          save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """One request per input length, going up, until one fails: where it got and how it
    failed (the request's error, and whether the engine survived). ``earlier``: an
    unfinished record of the same ramp (a resumed run), continued after its last length."""
    fresh = not (isinstance(earlier, dict) and earlier.get("failed_at_input_len") is None
                 and earlier.get("input_lens") == list(s.ramp_input_lens))
    record: dict[str, Any] = {"scenario": s.name, "kind": "ramp", "endpoint": s.endpoint,
                              "input_lens": list(s.ramp_input_lens), "steps": [],
                              "max_completed_input_len": None, "failed_at_input_len": None,
                              "error": None, "engine_alive_after": True} if fresh else earlier
    steps: list[dict[str, Any]] = record["steps"]
    reached = record["max_completed_input_len"] or 0
    for n in [n for n in s.ramp_input_lens if n > reached]:
        print(f"{s.name}/ramp: input {n} tokens", flush=True)
        # no warmup: the one request at each length is the test
        r = measure(_config(recipe, s, base_url, out_dir / f"{s.name}-ramp-{n}.json",
                            tokenizer, max_concurrency=1, num_prompts=1, input_len=n,
                            num_warmups=0), api_key=api_key)
        ok = r["completed"] == 1
        steps.append({"input_len": n, "ok": ok, "ttft_ms": r["median_ttft_ms"] if ok else None,
                      "tpot_ms": r["median_tpot_ms"] if ok else None,
                      "error": r["errors"][0] if not ok else ""})
        if ok:
            record["max_completed_input_len"] = n
            save(record)
            continue
        record["failed_at_input_len"] = n
        record["error"] = r["errors"][0]
        record["engine_alive_after"] = _alive(recipe, base_url, api_key)
        print(f"{s.name}/ramp: failed at {n} tokens: {record['error']} (engine "
              f"{'still up' if record['engine_alive_after'] else 'gone'})", flush=True)
        break
    return record


def _ms(value: float | None, digits: int) -> str:
    """A metric for a progress line: ``n/a`` where the set was empty (no request succeeded)."""
    return "n/a" if value is None else f"{value:.{digits}f} ms"


def summary_table(results: dict[str, Any]) -> pd.DataFrame:
    """One row per scenario × concurrency from a measure step's results."""
    import pandas as pd

    rows = []
    for key, r in results.items():
        if "/c" not in key or not isinstance(r, dict):
            continue  # ramps, engine_lost, engine_exit: not concurrency results
        # per user: decode speed after the first text (vLLM's TPOT starts at a role chunk)
        tpot = r.get("median_tpot_text_ms") or r.get("median_tpot_ms") or 0.0
        rows.append({**{k: r.get(k) for k in TABLE_COLUMNS},
                     "endpoint": r.get("endpoint_type"),
                     "per_user_tok_s": 1000.0 / tpot if tpot else None})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


class Chart:
    """A matplotlib figure that notebooks show as a PNG (no pyplot, no global state)."""

    def __init__(self, figure: Figure) -> None:
        self.figure = figure

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=100)
        return buf.getvalue()

    def save(self, path: str | Path) -> Path:
        """Write the PNG (for people who would rather look than read JSON)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(self._repr_png_())
        return out


def measure_figure(table: pd.DataFrame, save_to: str | Path = "") -> Chart:
    """TTFT and TPOT against concurrency per scenario, and per-user against total tokens/s
    (the throughput-latency trade-off people read first); saved as PNG when ``save_to``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 4), layout="constrained")
    ax_ttft, ax_tpot, ax_tradeoff = fig.subplots(1, 3)
    for name, group in table.groupby("scenario", sort=False):
        g = group.sort_values("concurrency")
        ax_ttft.plot(g["concurrency"], g["median_ttft_ms"], marker="o", label=str(name))
        ax_tpot.plot(g["concurrency"], g["median_tpot_ms"], marker="o", label=str(name))
        ax_tradeoff.plot(g["output_throughput"], g["per_user_tok_s"], marker="o",
                         label=str(name))
        for _, row in g.iterrows():
            ax_tradeoff.annotate(f"c{row['concurrency']}",
                                 (row["output_throughput"], row["per_user_tok_s"]),
                                 textcoords="offset points", xytext=(4, 4), fontsize=8)
    for ax in (ax_ttft, ax_tpot):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrency")
    ax_ttft.set_ylabel("median TTFT (ms)")
    ax_tpot.set_ylabel("median TPOT (ms)")
    ax_tradeoff.set_xlabel("total output tokens/s")
    ax_tradeoff.set_ylabel("per-user tokens/s (1000 / median TPOT)")
    for ax in (ax_ttft, ax_tpot, ax_tradeoff):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    chart = Chart(fig)
    if save_to:
        chart.save(save_to)
    return chart


# ---------------------------------------------------------------- 04_compare
_PROVENANCE_KEYS = (
    ("kit commit", ("kit_commit",)), ("kit dirty", ("kit_dirty",)),
    ("engine", ("engine", "name")), ("engine version", ("engine", "version")),
    ("engine command", ("engine", "command")), ("model", ("model", "id")),
    ("model revision", ("model", "resolved_revision")),
    ("model files", ("model", "files_hash", "sha256")),
    ("GPU", ("hardware", "gpus", 0, "name")), ("GPU count", ("hardware", "gpu_count")),
    ("driver", ("hardware", "driver_version")),
    ("power limit W", ("hardware", "gpus", 0, "power_limit_w")),
    ("CPU", ("hardware", "cpu", "model")), ("python", ("python",)),
)


def _dig(obj: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        try:
            obj = obj[part]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def compare_runs(run_dirs: list[str | Path], results_path: str | Path = ""
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Measure results of several runs side by side, and their provenance with every
    difference flagged. Each run folder must hold a ``03_measure.json`` sidecar."""
    import pandas as pd

    tables = []
    prov_rows: dict[str, dict[str, Any]] = {}
    for run in run_dirs:
        sidecar = Path(run) / "03_measure.json"
        if not sidecar.is_file():
            raise UsageError("compare.runs", f"{run} has no 03_measure.json sidecar")
        data = json.loads(sidecar.read_text(encoding="utf-8"))
        where = Path(run).resolve()  # the runner passes its own folder as "."
        label = f"{where.parent.name}/{where.name}"
        t = summary_table(data.get("results", {}))
        t.insert(0, "run", label)
        tables.append(t)
        prov_rows[label] = {name: _dig(data.get("provenance", {}), path)
                            for name, path in _PROVENANCE_KEYS}
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    prov = pd.DataFrame(prov_rows)
    if not prov.empty:
        prov["differs"] = prov.apply(lambda row: row.astype(str).nunique() > 1, axis=1)
    save_results(results_path, {"runs": [str(r) for r in run_dirs],
                                "provenance_differences": prov.index[prov["differs"]].tolist()
                                if not prov.empty else []})
    return table, prov
