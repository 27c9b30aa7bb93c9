"""What a resumed run may skip: a step, a scenario or a ramp counts as done only when its
result stands on its own.

* ``02_launch`` describes one engine process (its readiness token, its command and port,
  its log). When ``03_measure`` still has to run against an engine the runner starts, that
  engine is a new process, so ``02_launch`` runs again for it even if an earlier attempt's
  launch was ok.
* A scenario at one concurrency is done when every request it sent is accounted for
  (completed + failed = requested), at least one completed, and no more failed than the
  scenario's ``max_failed_fraction`` allows.
* A long-context ramp is done when it found its limit (a length failed) or every length
  completed: re-running a ramp that found its limit would only crash the engine again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlib.pipeline._sidecar import read_sidecar
from benchlib.recipe import Recipe, Scenario

__all__ = ["done_steps", "ramp_done", "scenario_done", "scenario_problem"]


def done_steps(recipe: Recipe, run_dir: Path) -> set[str]:
    """The recipe's steps that an earlier attempt in ``run_dir`` finished and that need not
    run again."""
    done: set[str] = set()
    for step in recipe.steps:
        sidecar = run_dir / f"{step}.json"
        if sidecar.is_file() and read_sidecar(sidecar).status == "ok":
            done.add(step)
    measure_pending = "03_measure" in recipe.steps and "03_measure" not in done
    if measure_pending and recipe.engine.kind != "endpoint":
        done.discard("02_launch")  # a new engine process gets its own launch record
    return done


def scenario_problem(record: Any, requested: int, max_failed_fraction: float) -> str | None:
    """Why a scenario's result (one concurrency) is not done, or ``None`` when it is."""
    if not isinstance(record, dict):
        return "not measured"
    completed, failed = int(record.get("completed") or 0), int(record.get("failed") or 0)
    if completed + failed != requested:
        return (f"{completed} completed + {failed} failed of {requested} requests: not every "
                "request is accounted for")
    if completed == 0:
        return "no request completed"
    if failed > max_failed_fraction * requested:
        return (f"{failed} of {requested} requests failed (max_failed_fraction "
                f"{max_failed_fraction:g})")
    return None


def scenario_done(record: Any, requested: int, max_failed_fraction: float) -> bool:
    """Whether a scenario's result at one concurrency may be kept on resume."""
    return scenario_problem(record, requested, max_failed_fraction) is None


def ramp_done(record: Any, scenario: Scenario) -> bool:
    """Whether a ramp's record is a finished result for ``scenario``'s lengths."""
    lens: Sequence[int] = scenario.ramp_input_lens
    if not isinstance(record, dict) or record.get("input_lens") != list(lens) or not lens:
        return False
    return (record.get("failed_at_input_len") is not None
            or record.get("max_completed_input_len") == lens[-1])
