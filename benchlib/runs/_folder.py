"""The run folder: the one place that knows where a run's files lie.

``<outputs>/YYYY-MM-DD/<recipe>[-N]/`` (UTC date) holds ``recipe.json`` (the validated
recipe), ``run.json`` (finished or not, the recipe's hash), ``NN_step.ipynb`` +
``NN_step.json`` per step (earlier attempts kept as ``NN_step.attempt-K.*``), ``.results/``
(each step's results as its notebook wrote them), ``engine.log`` (earlier attempts:
``engine.attempt-K.log``) and ``measure/`` (one result JSON per scenario × concurrency or
ramp length, and ``summary.png``). A recipe with variants gives each variant a folder of
that shape, ``<run>/<variant>/``, and keeps the run-wide steps (``04_compare``) at the top. A
finished folder is never overwritten: the next run of
the same recipe that day gets ``-2``, ``-3`` …; an unfinished run of the same, unchanged
recipe is resumed in its own folder.

Every other module asks a :class:`RunFolder` for these paths. Built on a relative path
(``RunFolder(path=Path("."))``, as a notebook run by the runner sees its folder), it gives
relative paths, so what it names can be recorded and the folder moved.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from benchlib.runs._keys import StepKey

R = TypeVar("R", bound=BaseModel)

__all__ = ["RunFolder", "RunState"]


class RunState(BaseModel):
    """``run.json``: what a resume needs to know about an earlier run in this folder."""

    recipe: str = Field("", description="the recipe file, relative to the kit when inside it")
    recipe_sha256: str = Field(description="hash of recipe.json: a changed recipe is a new run")
    finished: bool = Field(description="every step of the recipe ended ok")
    statuses: dict[str, str] = Field(default_factory=dict, description="step → status")


def _today() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


class RunFolder(BaseModel):
    """One run's folder and the names of everything in it."""

    model_config = ConfigDict(frozen=True)

    path: Path = Field(description="the folder (relative paths stay relative)")

    # ------------------------------------------------------------------ finding one
    @classmethod
    def pick(cls, outputs: Path, name: str, digest: str, force: bool,
             log: Callable[[str], None]) -> tuple[RunFolder, bool]:
        """``(folder, resumed)``: the recipe's latest run, whatever its day, when it is
        unfinished and of this very recipe (same name and same content), to resume; else a
        fresh folder under today's date (``name``, ``name-2``, …), created. Whatever its day:
        a run that failed at 23:50 UTC and is run again at 00:10 resumes where it stopped."""
        existing = cls.runs_of(outputs, name)
        if existing and not force:
            last = existing[-1]
            state = last.read_state()
            if state is not None and not state.finished:
                if state.recipe_sha256 == digest:
                    if last.path.parent.name != _today():
                        log(f"resuming a run started on {last.path.parent.name}")
                    return last, True
                log(f"not resuming {last.path}: the recipe changed since")
        return cls.create(outputs, name), False

    @classmethod
    def create(cls, outputs: Path, name: str) -> RunFolder:
        """A new folder for ``name`` under today's date: ``name``, else ``name-N``."""
        day = outputs / _today()
        n = max((f.number(name) for f in cls._numbered(day, name)), default=0)
        while True:
            path = day / (name if n == 0 else f"{name}-{n + 1}")
            try:
                path.mkdir(parents=True)
                return cls(path=path)
            except FileExistsError:
                n += 1

    @classmethod
    def runs_of(cls, outputs: Path, name: str) -> list[RunFolder]:
        """Every run folder of recipe ``name`` under ``outputs``, oldest first."""
        days = sorted(p for p in outputs.glob("[0-9]*-[0-9]*-[0-9]*") if p.is_dir())
        return [f for day in days for f in cls._numbered(day, name)]

    @classmethod
    def _numbered(cls, day: Path, name: str) -> list[RunFolder]:
        found = (cls(path=p) for p in day.glob(f"{name}*") if p.is_dir())
        return sorted((f for f in found if f.number(name)), key=lambda f: f.number(name))

    def number(self, name: str) -> int:
        """1 for ``name``, N for ``name-N``, 0 when this folder is not one of ``name``'s."""
        m = re.fullmatch(rf"{re.escape(name)}(?:-(\d+))?", self.path.name)
        return int(m.group(1) or 1) if m else 0

    # ------------------------------------------------------------------ what lies in it
    def variant(self, name: str) -> RunFolder:
        """A variant's own folder inside the run (its recipe.json, steps, engine log and
        measurements); ``""`` (a recipe without variants): this folder."""
        return self if not name else RunFolder(path=self.path / name)

    @property
    def recipe_json(self) -> Path:
        """The validated recipe, paths inside the kit relative to it."""
        return self.path / "recipe.json"

    @property
    def state_json(self) -> Path:
        return self.path / "run.json"

    @property
    def engine_log(self) -> Path:
        return self.path / "engine.log"

    @property
    def measure_dir(self) -> Path:
        return self.path / "measure"

    @property
    def summary_png(self) -> Path:
        """The measure step's chart: TTFT, TPOT and the throughput-latency trade-off."""
        return self.measure_dir / "summary.png"

    def measure_json(self, scenario: str, concurrency: int) -> Path:
        return self.measure_dir / f"{scenario}-c{concurrency}.json"

    def ramp_json(self, scenario: str, input_len: int) -> Path:
        return self.measure_dir / f"{scenario}-ramp-{input_len}.json"

    def notebook(self, step: str | StepKey[Any]) -> Path:
        return self.path / f"{step}.ipynb"

    def sidecar(self, step: str | StepKey[Any]) -> Path:
        return self.path / f"{step}.json"

    def results(self, step: str | StepKey[Any]) -> Path:
        """Where the step's notebook writes its results as they accrue."""
        return self.path / ".results" / f"{step}.json"

    def result(self, step: StepKey[R]) -> R | None:
        """The step's saved results, typed (``STEP_MEASURE`` → a ``MeasureStep``); None when
        it saved none. Raises pydantic's ValidationError when they do not fit the model."""
        path = self.results(step)
        if not path.is_file():
            return None
        return step.model.model_validate_json(path.read_text(encoding="utf-8"))

    # ------------------------------------------------------------------ keeping it
    def start(self, snapshot: str, state: RunState) -> None:
        """Write ``recipe.json`` and an unfinished ``run.json``; make ``.results/``."""
        self.results("_").parent.mkdir(parents=True, exist_ok=True)
        self.recipe_json.write_text(snapshot)
        self.write_state(state)

    def read_state(self) -> RunState | None:
        """``run.json``, or None when there is none (or it is unreadable)."""
        try:
            return RunState.model_validate_json(self.state_json.read_text())
        except (OSError, ValueError):
            return None

    def write_state(self, state: RunState) -> None:
        self.state_json.write_text(json.dumps(state.model_dump()) + "\n")

    def keep_earlier_attempt(self, step: str) -> None:
        """Nothing measured is lost: an earlier attempt's notebook and sidecar are renamed
        ``NN_step.attempt-K.*`` before the step runs again."""
        self._set_aside([self.notebook(step), self.sidecar(step)], step)

    def keep_earlier_engine_log(self) -> None:
        """An earlier attempt's engine log stays beside, whole: ``engine.attempt-K.log``."""
        self._set_aside([self.engine_log], "engine")

    def _set_aside(self, files: Iterable[Path], stem: str) -> None:
        names = list(files)
        present = [p for p in names if p.exists()]
        if not present:
            return
        k = 1
        while any((self.path / f"{stem}.attempt-{k}{p.suffix}").exists() for p in names):
            k += 1
        for p in present:
            p.rename(self.path / f"{stem}.attempt-{k}{p.suffix}")
