"""Provenance assembly: the facts captured once per run (kit commit, packages, hardware,
engine version) and those a run learns as it goes (engine command and log, model files)
put together into one :class:`Provenance` per sidecar, and the machine held against the
recipe's ``hardware`` section."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from benchlib._exceptions import UsageError
from benchlib.adapters import adapter
from benchlib.energy._power_cap import PowerCapRecord
from benchlib.memory import device_mismatch, entry_for_device, find_gpu
from benchlib.provenance._hardware import GPUInfo, HardwareInfo, collect_hardware
from benchlib.provenance._lock import LockCheck, check_lock, lock_mismatch
from benchlib.provenance._model import read_model_origin
from benchlib.provenance._record import (
    EngineProvenance,
    ModelFiles,
    ModelProvenance,
    Provenance,
)
from benchlib.provenance._software import (
    engine_version,
    environment_hash,
    git_state,
    installed_packages,
    python_version,
)
from benchlib.recipe import Recipe, portable

__all__ = ["EngineRecord", "RunEnvironment", "assemble_provenance", "capture_environment",
           "hardware_mismatches"]



class RunEnvironment(BaseModel):
    """What does not change while a run goes on: read once, at its start."""

    kit_commit: str | None = Field(description="git commit of the kit")
    kit_dirty: bool | None = Field(description="uncommitted changes to tracked files")
    packages: dict[str, str] = Field(description="installed distributions → versions")
    environment_yml_sha256: str | None = Field(description="hash of environment.yml")
    hardware: HardwareInfo = Field(description="GPUs, CPU, memory, OS")
    engine_version: str | None = Field(description="the engine environment's version")
    engine_lock: LockCheck | None = Field(None, description="engine.lock: the engine's "
                                          "environment held to its lock file")
    python: str = Field(description="this interpreter")


class EngineRecord(BaseModel):
    """What a run knows of its engine when a sidecar is written."""

    command: str | None = Field(None, description="as launched, secrets redacted")
    startup_s: float | None = Field(None, description="seconds from start to ready")
    log_facts: dict[str, Any] = Field(default_factory=dict, description="parsed engine log")
    lowered: dict[str, int] = Field(
        default_factory=dict, description="engine.nice: the threads of each named process "
                                          "whose priority the kit lowered (0: none found)")
    power_cap: PowerCapRecord | None = Field(None, description="hardware.power_limit_w as "
                                             "held at launch")


def _engine_lock(recipe: Recipe, kit: Path) -> LockCheck | None:
    """``engine.lock`` held against the engine's interpreter (named relative to the kit
    when it lies inside it, so a run folder can move)."""
    lock = recipe.engine.lock
    if lock is None:
        return None
    shown = str(portable(lock, kit.resolve()))
    python = adapter(recipe.engine.kind).environment_python(recipe.engine.python)
    if python is None:
        return LockCheck(path=shown, error="no python3 on PATH and no engine.python")
    return check_lock(lock, python, shown=shown)


def capture_environment(recipe: Recipe, kit: Path) -> RunEnvironment:
    """Read the kit's git state, packages, environment file, hardware, engine version and
    the engine's environment against its lock."""
    commit, dirty = git_state(kit)
    return RunEnvironment(
        engine_lock=_engine_lock(recipe, kit),
        kit_commit=commit, kit_dirty=dirty, packages=installed_packages(),
        environment_yml_sha256=environment_hash(kit / "environment.yml"),
        hardware=collect_hardware(),
        engine_version=engine_version(recipe.engine.python,
                                      adapter(recipe.engine.kind).distributions),
        python=python_version())


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


def _plan_gpu_mismatches(recipe: Recipe, gpus: Sequence[GPUInfo]) -> list[str]:
    """The GPUs that are not the one the recipe's plan sized (``plan.gpu``): its KV budget,
    concurrency and decode floor are that GPU's, not this one's."""
    planned = recipe.plan.get("gpu")
    if not isinstance(planned, str) or not planned:
        return []
    try:
        gpu = find_gpu(planned)
    except UsageError:  # the recipe's own check names an unknown GPU
        return []
    out = []
    for d in gpus:
        why = device_mismatch(gpu, d.name, d.memory_total_gib)
        if why is None:
            continue
        entry = entry_for_device(d.name, d.memory_total_gib)
        fix = (f"plan.gpu: {entry.name}" if entry is not None else
               "plan.gpu_memory_gib and plan.gpu_bandwidth_gbs for this one")
        out.append(f"GPU {d.index} ({why}) is not the plan's {gpu.name} "
                   f"({gpu.memory_gib:.1f} GiB, {gpu.bandwidth_gbs:,.0f} GB/s): the plan's "
                   f"KV budget and decode floor are the {gpu.name}'s; give {fix}")
    return out


def hardware_mismatches(recipe: Recipe, env: RunEnvironment) -> list[str]:
    """Where the machine (and the engine's version) differ from what the recipe expects."""
    hw, info = recipe.hardware, env.hardware
    out = []
    if hw.gpu_count is not None and info.gpu_count != hw.gpu_count:
        out.append(f"expected {hw.gpu_count} GPUs, found {info.gpu_count}")
    for gpu in info.gpus:
        if hw.gpu_name_pattern and not re.search(hw.gpu_name_pattern, gpu.name):
            out.append(f"GPU {gpu.index} {gpu.name!r} does not match {hw.gpu_name_pattern!r}")
        if hw.min_gpu_memory_gib and gpu.memory_total_gib < hw.min_gpu_memory_gib:
            out.append(f"GPU {gpu.index} has {gpu.memory_total_gib} GiB < "
                       f"{hw.min_gpu_memory_gib}")
        if (hw.power_limit_w and gpu.power_limit_w
                and abs(gpu.power_limit_w - hw.power_limit_w) > 1):
            out.append(f"GPU {gpu.index} power limit {gpu.power_limit_w} W, expected "
                       f"{hw.power_limit_w} W")
    out += _plan_gpu_mismatches(recipe, info.gpus)
    if hw.driver_version and info.driver_version and info.driver_version != hw.driver_version:
        out.append(f"driver {info.driver_version}, expected {hw.driver_version}")
    cuda = info.cuda_driver_version
    if hw.cuda_version and cuda and _release(cuda) < _release(hw.cuda_version):
        out.append(f"the driver's CUDA {cuda} is older than the CUDA {hw.cuda_version} the "
                   "recipe was built with")
    pinned = recipe.engine.version
    if pinned and env.engine_version and env.engine_version != pinned:
        out.append(f"engine version {env.engine_version}, recipe pins {pinned}")
    locked = lock_mismatch(env.engine_lock) if env.engine_lock is not None else None
    if locked is not None:
        out.append(locked)
    return out


def assemble_provenance(recipe: Recipe, env: RunEnvironment, engine: EngineRecord,
                        model: ModelFiles | None) -> Provenance:
    """One sidecar's provenance. ``model``: the files ``01_download`` verified or fetched
    (None before it ran: then the recipe's local folder, if any, is named, with its origin
    when it has a PROVENANCE.json). The hardware is read again now (``hardware_end``):
    beside the run's start, the step's end."""
    path = model.path if model is not None else recipe.model.local_path
    if model is not None:
        origin = model.origin
    else:
        local = recipe.model.local_path
        origin = read_model_origin(local) if local is not None and local.exists() else None
    return Provenance(
        kit_commit=env.kit_commit, kit_dirty=env.kit_dirty,
        engine=EngineProvenance(
            name=recipe.engine.kind,
            version=env.engine_version or engine.log_facts.get("version"),
            expected_version=recipe.engine.version, commit=recipe.engine.commit,
            command=engine.command, startup_s=engine.startup_s, log_facts=engine.log_facts,
            lowered=engine.lowered, power_cap=engine.power_cap, lock=env.engine_lock),
        model=ModelProvenance(
            id=recipe.model.id, revision=recipe.model.revision,
            resolved_revision=model.resolved_revision if model else None,
            path=str(path) if path else None,
            files_hash=model.files_hash if model else None,
            weights=recipe.model.weights, origin=origin),
        hardware=env.hardware, hardware_end=collect_hardware(),
        hardware_mismatches=hardware_mismatches(recipe, env),
        python=env.python, packages=env.packages,
        environment_yml_sha256=env.environment_yml_sha256)
