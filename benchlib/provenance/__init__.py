"""Provenance: which kit commit, engine, model files and hardware produced a number —
captured (hardware, software, model files), assembled into a sidecar's record, and
compared between runs."""

from benchlib.provenance._assemble import (
    EngineRecord,
    RunEnvironment,
    assemble_provenance,
    capture_environment,
    hardware_mismatches,
)
from benchlib.provenance._compare import PROVENANCE_FACTS, compare_provenance, provenance_facts
from benchlib.provenance._hardware import CPUInfo, GPUInfo, HardwareInfo, collect_hardware
from benchlib.provenance._lock import (
    LockCheck,
    LockDifference,
    LockPin,
    check_lock,
    lock_summary,
    read_lock,
)
from benchlib.provenance._model import (
    ORIGIN_FILE,
    FilesHash,
    ModelOrigin,
    gguf_shards,
    hash_model_folder,
    read_model_origin,
)
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

__all__ = [
    "ORIGIN_FILE",
    "PROVENANCE_FACTS",
    "CPUInfo",
    "EngineProvenance",
    "EngineRecord",
    "FilesHash",
    "GPUInfo",
    "HardwareInfo",
    "LockCheck",
    "LockDifference",
    "LockPin",
    "ModelFiles",
    "ModelOrigin",
    "ModelProvenance",
    "Provenance",
    "RunEnvironment",
    "assemble_provenance",
    "capture_environment",
    "check_lock",
    "collect_hardware",
    "compare_provenance",
    "engine_version",
    "environment_hash",
    "gguf_shards",
    "git_state",
    "hardware_mismatches",
    "hash_model_folder",
    "installed_packages",
    "lock_summary",
    "provenance_facts",
    "python_version",
    "read_lock",
    "read_model_origin",
]
