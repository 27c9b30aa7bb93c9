"""``benchlib run``: a recipe's steps executed by papermill into a dated, never-overwritten
run folder (:class:`~benchlib.runs._folder.RunFolder`), each notebook with its JSON
sidecar.

The runner walks the step table (:mod:`benchlib.pipeline.steps`) in the recipe's order and
knows no step by name: a step's declaration says whether it needs the engine (the runner
starts it first, and stops it after the last step that needs it), which earlier steps must
have succeeded, which parameters its notebook takes and what its result tells later steps.

Secret values never reach the disk or the console: the engine's log is filtered as it is
written, papermill's echo and saved cells are filtered, sidecars are scrubbed before they are
written, and the whole folder is scrubbed after every step (see :mod:`benchlib._secrets`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlib._exceptions import UsageError
from benchlib._secrets import scrub_text, scrub_tree
from benchlib.engines import check_recipe_args, refuse_multi_node
from benchlib.pipeline._declare import RunFacts, Step, StepInputs
from benchlib.pipeline._engine import RunEngine
from benchlib.pipeline._execute import execute_step
from benchlib.pipeline._fairness import probe_differences
from benchlib.pipeline._partial import chosen_variants, hold_stored_launch, never_attempted
from benchlib.pipeline._resume import done_steps
from benchlib.pipeline._sidecar import Sidecar, Status, StepError, write_sidecar
from benchlib.pipeline.steps import step_table
from benchlib.provenance import (
    Provenance,
    RunEnvironment,
    assemble_provenance,
    capture_environment,
    hardware_mismatches,
)
from benchlib.recipe import Recipe, open_recipe, recipe_secrets
from benchlib.references import recipe_references
from benchlib.runs import (
    Probe,
    RunFolder,
    RunState,
    kit_root,
    portable,
    portable_recipe,
    read_results,
    synthetic_results,
)

__all__ = ["NOTEBOOKS", "RunSummary", "run_recipe"]

NOTEBOOKS = kit_root() / "notebooks"


@dataclass
class RunSummary:
    """Where a run went (``run_dir``) and how each step ended (``statuses``)."""

    run_dir: Path
    statuses: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(s == "ok" for s in self.statuses.values())


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class _Runner:
    """One run of a recipe's steps in one folder."""

    def __init__(self, recipe: Recipe, folder: RunFolder, steps: list[Step[Any]],
                 log: Callable[[str], None],
                 gate: Callable[[RunFacts], None] | None = None) -> None:
        self.recipe = recipe
        self.gate = gate
        self.folder = folder
        self.steps = steps
        self.secrets = recipe_secrets(recipe)
        self._log = log
        self.environment: RunEnvironment = capture_environment(recipe, kit_root())
        self.engine = RunEngine(recipe, folder, self.secrets, self.log)
        self.facts = RunFacts()
        self.statuses: dict[str, str] = {}

    def log(self, message: str) -> None:
        """Tell the user, never a secret's value (an engine error may quote one)."""
        self._log(scrub_text(message, self.secrets))

    def inputs(self) -> StepInputs:
        return StepInputs(folder=self.folder, recipe=self.recipe, engine=self.engine.facts(),
                          facts=self.facts)

    def provenance(self) -> Provenance:
        return assemble_provenance(self.recipe, self.environment, self.engine.record(),
                                   self.facts.model)

    def run(self, done: set[str]) -> None:
        """Every step in order; the engine stopped after the last step that needs it."""
        for mismatch in hardware_mismatches(self.recipe, self.environment):
            self.log(f"hardware: {mismatch}")
        last_engine_step = max((i for i, s in enumerate(self.steps) if s.engine != "none"),
                               default=-1)
        for i, step in enumerate(self.steps):
            if step.name in done:
                self.log(f"{step.name}: ok in an earlier attempt, skipped")
                self.statuses[step.name] = "ok"
            else:
                self.statuses[step.name] = self.attempt(step)
            if self.statuses[step.name] == "ok":
                self.take(step)
                if step.engine == "start" and self.gate is not None:
                    self.gate(self.facts)  # raises when this engine is not comparable
            if i == last_engine_step:
                self.engine.stop()

    def attempt(self, step: Step[Any]) -> str:
        """Run the step, or skip it when what it needs is missing."""
        if step.engine != "none":
            self.engine.start(self.inputs().model_path)
            if step.engine == "ready" and self.engine.launch_error:
                return self.skip(step, "the engine did not start: " + self.engine.launch_error)
        for required in step.requires:
            if self.statuses.get(required) not in (None, "ok"):
                return self.skip(step, f"{required} did not succeed")
        status = self.execute(step)
        scrub_tree(self.folder.path, self.secrets)  # what the step wrote, before the next one
        return status

    def take(self, step: Step[Any]) -> None:
        """What an ok step's result tells the steps after it (the model folder, …)."""
        if step.apply is None:
            return
        try:
            result = step.read_result(self.folder)
        except ValidationError as exc:
            self.log(f"{step.name}: results unreadable, not used: {exc}")
            return
        if result is not None:
            self.facts = step.apply(result, self.facts)

    def execute(self, step: Step[Any]) -> Status:
        out_nb = self.folder.notebook(step.name)
        self.folder.keep_earlier_attempt(step.name)
        params = step.runner_params(self.inputs())
        started, t0 = _now(), time.perf_counter()
        self.log(f"{step.name}: running {out_nb}")
        status, error = execute_step(NOTEBOOKS / step.notebook, out_nb, params, root=kit_root(),
                                     secrets=self.secrets, timeout=self.recipe.cell_timeout_s)
        results = read_results(self.folder.results(step.name))
        exited = self.engine.exit_record() if step.engine != "none" else None
        if exited is not None:  # the engine died under load: how, with the log's hints
            results["engine_exit"] = exited.model_dump(mode="json")
            status = "failed"
            error = error or StepError(ename="EngineExited",
                                       evalue=f"the engine exited with code {exited.code} "
                                              f"during {step.name}",
                                       hint="see results.engine_exit")
        write_sidecar(self.folder.sidecar(step.name), Sidecar(
            step=step.name, notebook=out_nb.name, status=status, error=error,
            started_at=started, finished_at=_now(),
            duration_s=round(time.perf_counter() - t0, 3), params=params,
            results=results, provenance=self.provenance().model_copy(
                update={"synthetic": synthetic_results(results)})), secrets=self.secrets)
        self.log(f"{step.name}: {status}" + (f" ({error.ename}: {error.evalue})" if error
                                             else ""))
        return status

    def skip(self, step: Step[Any], why: str) -> Status:
        write_sidecar(self.folder.sidecar(step.name), Sidecar(
            step=step.name, notebook=step.notebook, status="skipped",
            error=StepError(ename="Skipped", evalue=why), started_at=_now(),
            finished_at=_now(), duration_s=0.0, params=step.runner_params(self.inputs()),
            results=read_results(self.folder.results(step.name)),
            provenance=self.provenance()), secrets=self.secrets)
        self.log(f"{step.name}: skipped ({why})")
        return "skipped"


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """SIGTERM and SIGHUP as KeyboardInterrupt while the block runs."""
    previous = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run_steps(recipe: Recipe, folder: RunFolder, steps: list[Step[Any]], resumed: bool,
               log: Callable[[str], None], gate: Callable[[RunFacts], None] | None = None,
               state: RunState | None = None) -> dict[str, str]:
    """``steps`` of ``recipe`` in ``folder`` (done ones skipped on resume); the engine
    stopped, the folder scrubbed and its ``run.json`` written whatever happens. ``state``:
    the run folder's own, already started; else (a variant's folder) it is read on resume
    or the folder is started here."""
    if state is None and resumed:
        state = folder.read_state()
    if state is None:
        snapshot = portable_recipe(recipe, kit_root()).model_dump_json(indent=2) + "\n"
        state = RunState(recipe_sha256=hashlib.sha256(snapshot.encode()).hexdigest(),
                         finished=False)
        folder.start(snapshot, state)
    done = done_steps(recipe, folder, steps) if resumed else set()
    runner = _Runner(recipe, folder, steps, log, gate)
    try:
        runner.run(done)
    finally:
        runner.engine.stop()
        scrub_tree(folder.path, runner.secrets)
        folder.write_state(state.model_copy(update={
            "finished": all(runner.statuses.get(s.name) == "ok" for s in steps),
            "statuses": runner.statuses}))
    return runner.statuses


def _tagged(log: Callable[[str], None], tag: str, message: str) -> None:
    log(f"[{tag}] {message}")


def _fair_gate(recipe: Recipe, name: str, reference: dict[str, list[Probe]]
               ) -> Callable[[RunFacts], None]:
    """The check between a variant's launch and its measurements: its probe against the
    first variant's (:func:`~benchlib.pipeline._fairness.probe_differences`); a difference
    the recipe did not declare raises :class:`UsageError` (exit 2) naming the setting."""

    def gate(facts: RunFacts) -> None:
        if facts.probe is None:
            return
        if not reference:  # the first variant's probe: the others are held to it
            reference[name] = facts.probe
        first, probe = next(iter(reference.items()))
        refused = [(setting, why) for setting, why in probe_differences(
            probe, facts.probe) if setting not in recipe.compare.differences]
        if refused:
            lines = [f"{name} against {first}: " + why + (
                f" — add {setting} to compare.differences if it is the point of the "
                "comparison" if setting else "") for setting, why in refused]
            raise UsageError("compare.differences", "not a fair comparison, measuring "
                             "refused:\n  " + "\n  ".join(lines))

    return gate


def run_recipe(recipe_path: Path, recipe: Recipe | None = None, *,
               outputs: Path = Path("outputs"), force: bool = False,
               log: Callable[[str], None] = print,
               variants: Sequence[str] | None = None) -> RunSummary:
    """Validate, then run every step of the recipe; return where and how it went.
    ``recipe``: the file at ``recipe_path`` as the caller already opened it
    (:func:`benchlib.recipe.open_recipe`; read here when None).

    A recipe with variants runs the per-variant steps for each variant in turn, in its own
    folder, one engine alive at a time (the next starts once the previous group is gone),
    each checked against the first variant before it measures; then the run-wide steps.
    SIGTERM and SIGHUP are turned into KeyboardInterrupt while it runs, so a cancelled run
    still stops its engine, scrubs its files and records that it did not finish.

    ``variants``: run only these now (``benchlib run --variants``,
    :mod:`benchlib.pipeline._partial`); the others are left for a later run of the same
    recipe, which resumes the folder, and are still held to the first variant; the run-wide
    steps (``04_compare`` …) wait while one of them has never been attempted.
    """
    recipe = recipe if recipe is not None else open_recipe(recipe_path)
    chosen = chosen_variants(recipe, variants)
    for checked in check_recipe_args(recipe):  # a typo found now, not after a long start
        log(checked.summary)
    refuse_multi_node(recipe)  # an engine over several machines is started by hand
    recipe_references(recipe)  # so is a bad reference file
    table = step_table()
    steps = [table[name] for name in recipe.steps]
    snapshot = portable_recipe(recipe, kit_root()).model_dump_json(indent=2) + "\n"
    digest = hashlib.sha256(snapshot.encode()).hexdigest()
    folder, resumed = RunFolder.pick(outputs.resolve(), recipe.name, digest, force, log)
    log(f"{'resuming' if resumed else 'run'}: {folder.path}")
    earlier = folder.read_state() if resumed else None
    state = RunState(recipe=str(portable(recipe_path, kit_root())), recipe_sha256=digest,
                     finished=False)
    folder.start(snapshot, state)
    # what earlier attempts recorded stands in run.json (and the report) until this one runs
    # the step again: a variant left out by --variants keeps its statuses
    recorded: dict[str, str] = dict(earlier.statuses) if earlier is not None else {}
    statuses: dict[str, str] = {}
    completed = False  # every step of every variant was reached
    with _interruptible():
        try:
            if not recipe.variants:
                statuses.update(_run_steps(recipe, folder, steps, resumed, log, state=state))
            else:
                reference: dict[str, list[Probe]] = {}
                per_variant = [s for s in steps if s.scope == "variant"]
                waiting = []
                for name, variant in recipe.variant_recipes():
                    if name not in chosen:  # left for later: held to the first all the same
                        if never_attempted(folder.variant(name)):
                            waiting.append(name)
                        hold_stored_launch(folder.variant(name), per_variant,
                                           _fair_gate(recipe, name, reference))
                        continue
                    log(f"variant {name}: {variant.engine.kind}, speculative "
                        f"{variant.engine.speculative.label}")
                    done = _run_steps(variant, folder.variant(name), per_variant, resumed,
                                      functools.partial(_tagged, log, name),
                                      _fair_gate(recipe, name, reference))
                    statuses.update({f"{name}/{k}": v for k, v in done.items()})
                if waiting:
                    log(f"left for a later run (--variants): {', '.join(waiting)}; the "
                        "run-wide steps wait for them (run the recipe again to resume)")
                    return RunSummary(folder.path, statuses)
                statuses.update(_run_steps(recipe, folder, [s for s in steps
                                                            if s.scope == "run"],
                                           resumed, log, state=state))
            completed = True
        finally:
            recorded.update(statuses)
            folder.write_state(state.model_copy(update={
                "finished": completed and all(v == "ok" for v in recorded.values()),
                "statuses": recorded}))
    return RunSummary(folder.path, statuses)

