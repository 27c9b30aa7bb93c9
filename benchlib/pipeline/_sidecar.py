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
from benchlib.provenance import FilesHash, HardwareInfo

__all__ = ["EngineProvenance", "ModelProvenance", "Provenance", "Sidecar", "StepError",
           "read_sidecar", "write_sidecar"]


class StepError(BaseModel):
    """Where and how a step failed: papermill's cell, exception name and value."""

    ename: str
    evalue: str
    cell: int | None = None
    hint: str | None = None


class EngineProvenance(BaseModel):
    name: str
    version: str | None = None
    expected_version: str | None = None
    commit: str | None = None
    command: str | None = Field(None, description="as launched, secrets redacted")
    startup_s: float | None = None
    log_facts: dict[str, Any] = Field(default_factory=dict)


class ModelProvenance(BaseModel):
    id: str
    revision: str | None = None
    resolved_revision: str | None = None
    path: str | None = None
    files_hash: FilesHash | None = None


class Provenance(BaseModel):
    kit_commit: str | None
    kit_dirty: bool | None
    engine: EngineProvenance
    model: ModelProvenance
    hardware: HardwareInfo
    hardware_mismatches: list[str] = Field(default_factory=list)
    python: str
    packages: dict[str, str]
    environment_yml_sha256: str | None


class Sidecar(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    step: str
    notebook: str
    status: Literal["ok", "failed", "timeout", "skipped"]
    error: StepError | None = None
    started_at: str
    finished_at: str
    duration_s: float
    params: dict[str, Any]
    results: dict[str, Any] = Field(default_factory=dict)
    provenance: Provenance


def write_sidecar(path: Path, sidecar: Sidecar, secrets: Sequence[str] = ()) -> None:
    """Write atomically (a crash never leaves half a sidecar), without ``secrets``."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_bytes(scrub_bytes((sidecar.model_dump_json(indent=2) + "\n").encode(), secrets))
    tmp.replace(path)


def read_sidecar(path: Path) -> Sidecar:
    return Sidecar.model_validate(json.loads(path.read_text(encoding="utf-8")))
