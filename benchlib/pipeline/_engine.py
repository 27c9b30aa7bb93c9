"""The engine a run starts: planned from the recipe, started in its own process group with
its log in the run folder (an earlier attempt's log kept beside), waited for, and stopped
as a whole group — after the last step that needs it, or on any failure, timeout or Ctrl-C,
so no engine outlives a run. An ``endpoint`` recipe starts nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

from pydantic import BaseModel, Field

from benchlib._secrets import env_secret
from benchlib.energy._power_cap import PowerCapRecord
from benchlib.engines import (
    EngineError,
    EngineProcess,
    LaunchPlan,
    lower_priority,
    lowered_lines,
    parse_engine_log,
    plan_launch,
)
from benchlib.pipeline._declare import EngineFacts
from benchlib.pipeline._power import hold_power_cap
from benchlib.provenance import EngineRecord
from benchlib.recipe import Recipe
from benchlib.runs import RunFolder, relative_text

__all__ = ["EngineExit", "RunEngine"]


class EngineExit(BaseModel):
    """An engine the runner started that exited under a step (kept in the step's sidecar as
    ``results.engine_exit``)."""

    code: int = Field(description="its exit code")
    log_tail: str = Field(description="the last lines of its log")
    hints: list[str] = Field(default_factory=list, description="known failures the log shows")


class RunEngine:
    """One run's engine: started at most once, stopped at most once."""

    def __init__(self, recipe: Recipe, folder: RunFolder, secrets: Sequence[str],
                 log: Callable[[str], None]) -> None:
        self.recipe = recipe
        self.folder = folder
        self.secrets = list(secrets)
        self.log = log
        self.process: EngineProcess | None = None
        self.plan: LaunchPlan | None = None
        self.launch_error = ""
        self.stopped = False
        #: engine.nice: threads reniced per process name
        self.lowered: dict[str, int] = {}
        #: hardware.power_limit_w: held from the start to the stop (:mod:`._power`)
        self.power_cap: PowerCapRecord | None = None
        self._held = ExitStack()

    def start(self, model_path: Path | None) -> None:
        """Start the engine on ``model_path`` (else the model's id) and wait until it is
        ready; a failure is kept in :attr:`launch_error` (02_launch reports it)."""
        if self.process is not None or self.launch_error:
            return
        self.plan = plan_launch(self.recipe.engine, self.recipe.model,
                                model_path or Path(self.recipe.model.id))
        if not self.plan.argv:  # an endpoint: nothing to start
            return
        self.power_cap = hold_power_cap(self.recipe, self._held, self.log)
        self.log(f"starting {self.plan.kind}: {self.plan.recorded_command}")
        self.folder.keep_earlier_engine_log()
        api_key_env = self.recipe.engine.api_key_env
        self.process = EngineProcess(
            self.plan.resolved_argv(), log_path=self.folder.engine_log,
            ready_url=self.plan.ready_url, env=self.plan.env,
            ready_timeout=self.recipe.engine.ready_timeout_s,
            api_key=env_secret(api_key_env), secrets=self.secrets)
        try:
            self.process.start()
            self.log(f"engine process group {self.process.pgid}")
            startup = self.process.wait_ready()
            self.log(f"engine ready after {startup:.1f} s")
            self._lower_priority()
        except EngineError as exc:
            self.launch_error = relative_text(str(exc).split("\n--- engine log", 1)[0],
                                              self.folder.path)
            self.log(f"engine failed: {self.launch_error}")
            self.process.stop()

    def _lower_priority(self) -> None:
        """``engine.nice``: lower the named processes' priority, and say what was done."""
        nice = self.recipe.engine.nice
        if not nice or self.process is None or self.process.pgid is None:
            return
        self.lowered = lower_priority(self.process.pgid, nice)
        for line in lowered_lines(self.lowered, nice):
            self.log(line)

    def stop(self) -> None:
        """Stop the engine's whole group, also when its leader already exited (workers can
        outlive it, holding GPU memory); then each GPU's earlier power limit is put back."""
        try:
            self._stop_group()
        finally:
            self._held.close()

    def _stop_group(self) -> None:
        if self.process is not None and self.process.proc is not None and not self.stopped:
            self.process.stop()
            self.stopped = True
            self.log("engine stopped" if self.process.group_gone else
                     f"engine stopped, but processes of group {self.process.pgid} are still "
                     "there after SIGKILL (stuck in the kernel or the GPU driver?)")

    def facts(self) -> EngineFacts:
        """What a step's parameters say about the engine."""
        return EngineFacts(
            base_url=self.plan.base_url if self.plan else "",
            command=self.plan.recorded_command if self.plan else "",
            log_name=self.process.log_path.name if self.process else "",
            startup_s=self.process.startup_s if self.process else None,
            launch_error=self.launch_error)

    def record(self) -> EngineRecord:
        """What the provenance says about the engine."""
        facts: dict[str, object] = {}
        if self.process is not None and self.process.log_path.is_file():
            facts = parse_engine_log(
                self.process.log_path.read_text(errors="replace")).as_dict()
        return EngineRecord(command=self.plan.recorded_command if self.plan else None,
                            startup_s=self.process.startup_s if self.process else None,
                            log_facts=facts, lowered=self.lowered, power_cap=self.power_cap)

    def exit_record(self) -> EngineExit | None:
        """When the engine the runner started has exited (died under load): its code, the
        log's tail and hints; else None."""
        proc = self.process.proc if self.process else None
        code = proc.poll() if proc is not None else None
        if self.process is None or code is None or self.launch_error:
            return None
        self.process.wait_log(timeout=2.0)
        facts = parse_engine_log(self.process.log_path.read_text(errors="replace"))
        return EngineExit(code=code, log_tail=self.process.log_tail(),
                          hints=[f"{f.name}: {f.hint}" for f in facts.failures])
