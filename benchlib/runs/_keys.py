"""The steps' names, once, each tied to its typed result: ``STEP_MEASURE`` names
``03_measure`` and says its results are a :class:`~._measure.MeasureStep`, so
:meth:`RunFolder.result(STEP_MEASURE) <benchlib.runs.RunFolder.result>` is typed for mypy
and a step name is never a string literal outside this module. The names are the recipe's
vocabulary (:data:`benchlib.recipe.StepName`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from benchlib.recipe import ALL_STEPS, StepName
from benchlib.runs._launch import LaunchResult
from benchlib.runs._measure import MeasureStep
from benchlib.runs._models import CompareResult, DownloadResult, PlanResult

__all__ = ["STEP_COMPARE", "STEP_DOWNLOAD", "STEP_KEYS", "STEP_LAUNCH", "STEP_MEASURE",
           "STEP_PLAN", "StepKey"]

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class StepKey(Generic[R]):
    """A step's name and the model its results file holds."""

    name: StepName
    model: type[R]

    def __str__(self) -> str:
        return self.name


STEP_PLAN = StepKey("00_plan", PlanResult)
STEP_DOWNLOAD = StepKey("01_download", DownloadResult)
STEP_LAUNCH = StepKey("02_launch", LaunchResult)
STEP_MEASURE = StepKey("03_measure", MeasureStep)
STEP_COMPARE = StepKey("04_compare", CompareResult)

#: every step, in order
STEP_KEYS: tuple[StepKey[PlanResult] | StepKey[DownloadResult] | StepKey[LaunchResult]
                 | StepKey[MeasureStep] | StepKey[CompareResult], ...] = (
    STEP_PLAN, STEP_DOWNLOAD, STEP_LAUNCH, STEP_MEASURE, STEP_COMPARE)
assert tuple(k.name for k in STEP_KEYS) == ALL_STEPS, "the recipe's steps and these differ"
