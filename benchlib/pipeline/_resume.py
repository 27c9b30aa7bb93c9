"""What a resumed run may skip: a step, a scenario or a ramp counts as done only when its
result stands on its own.

* A step that describes one engine process (``02_launch``: its readiness token, its
  command and port, its log) runs again when a step that needs the engine (``03_measure``)
  still has to run against an engine the runner starts: that engine is a new process.
* A scenario at one concurrency is done when every request it sent is accounted for
  (completed + failed = requested), at least one completed, and no more failed than the
  scenario's ``max_failed_fraction`` allows.
* A long-context ramp is done when it found its limit (a length failed) or every length
  completed: re-running a ramp that found its limit would only crash the engine again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from benchlib.adapters import adapter
from benchlib.pipeline._sidecar import read_sidecar
from benchlib.recipe import Recipe, Scenario
from benchlib.runs import Measurement, Ramp, RunFolder

if TYPE_CHECKING:
    from benchlib.pipeline._declare import Step

__all__ = ["done_steps", "ramp_done", "scenario_done", "scenario_problem"]


def done_steps(recipe: Recipe, folder: RunFolder, steps: Sequence[Step[Any]]) -> set[str]:
    """The ``steps`` that an earlier attempt in ``folder`` finished and that need not run
    again: ok in their sidecar, except a step that describes the engine process
    (``engine="start"``) when a step that needs the engine is still to run and the runner
    will start a new engine for it."""
    done = {s.name for s in steps
            if folder.sidecar(s.name).is_file()
            and read_sidecar(folder.sidecar(s.name)).status == "ok"}
    engine_needed = any(s.engine == "ready" and s.name not in done for s in steps)
    if engine_needed and adapter(recipe.engine.kind).starts_process:
        done -= {s.name for s in steps if s.engine == "start"}
    return done


def scenario_problem(record: Measurement | None, requested: int,
                     max_failed_fraction: float) -> str | None:
    """Why a scenario's result (one concurrency) is not done, or ``None`` when it is."""
    if record is None:
        return "not measured"
    completed, failed = record.completed, record.failed
    if completed + failed != requested:
        return (f"{completed} completed + {failed} failed of {requested} requests: not every "
                "request is accounted for")
    if completed == 0:
        return "no request completed"
    if failed > max_failed_fraction * requested:
        return (f"{failed} of {requested} requests failed (max_failed_fraction "
                f"{max_failed_fraction:g})")
    return None


def scenario_done(record: Measurement | None, requested: int,
                  max_failed_fraction: float) -> bool:
    """Whether a scenario's result at one concurrency may be kept on resume."""
    return scenario_problem(record, requested, max_failed_fraction) is None


def ramp_done(record: Ramp | None, scenario: Scenario) -> bool:
    """Whether a ramp's record is a finished result for ``scenario``'s lengths."""
    lens: Sequence[int] = scenario.ramp_input_lens
    if record is None or record.input_lens != list(lens) or not lens:
        return False
    return (record.failed_at_input_len is not None
            or record.max_completed_input_len == lens[-1])
