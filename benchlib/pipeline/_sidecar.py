"""The JSON sidecar beside every executed notebook: status, params, results, provenance.

Written by the runner for every step it attempts, ok or not, so a failed or timed-out step
still leaves its record. ``status`` is checked by the runner itself: papermill saves a
notebook whose cell timed out as if nothing happened. A sidecar is scrubbed of secret values
before it is written (a step's results may quote what a server answered), and its paths into
the run folder are relative to it (the runner's parameters are).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib._secrets import scrub_bytes
from benchlib.provenance import Provenance
from benchlib.runs import write_atomic

__all__ = ["ParamValue", "Params", "Sidecar", "Status", "StepError", "read_sidecar",
           "write_sidecar"]

Status = Literal["ok", "failed", "timeout", "skipped"]
#: a notebook parameter's value: the types its parameters cell declares
ParamValue = str | int | float | bool | list[str] | None
#: a notebook's parameters, as papermill passes them
Params = dict[str, ParamValue]


class StepError(BaseModel):
    """How a step failed, and where, kept apart as papermill keeps them."""

    ename: str = Field(description="exception name")
    evalue: str = Field(description="exception message")
    cell_index: int | None = Field(None, description="the failing cell's position in the "
                                                     "notebook, from 0 (markdown included)")
    exec_count: int | None = Field(None, description="its execution count: the [N] Jupyter "
                                                     "shows beside it")
    hint: str | None = Field(None, description="what to do about it")


class Sidecar(BaseModel):
    """One step's record."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(2, description="2: StepError's cell split into cell_index "
                                               "and exec_count")
    step: str
    notebook: str = Field(description="the executed notebook, beside the sidecar")
    status: Status
    error: StepError | None = None
    started_at: str = Field(description="UTC, ISO 8601")
    finished_at: str = Field(description="UTC, ISO 8601")
    duration_s: float
    params: Params = Field(description="the parameters the notebook was given")
    # a JSON boundary: any step's results as its notebook wrote them, read by whoever
    # knows the step (typed: benchlib.runs.RunFolder.result), plus the runner's engine_exit
    results: dict[str, Any] = Field(default_factory=dict,
                                    description="the step's results (its result model's "
                                                "JSON), plus engine_exit if the engine died")
    provenance: Provenance


def write_sidecar(path: Path, sidecar: Sidecar, secrets: Sequence[str] = ()) -> None:
    """Write atomically (a crash never leaves half a sidecar), without ``secrets``."""
    write_atomic(path, scrub_bytes((sidecar.model_dump_json(indent=2) + "\n").encode(),
                                   secrets))


def read_sidecar(path: Path) -> Sidecar:
    return Sidecar.model_validate(json.loads(path.read_text(encoding="utf-8")))
