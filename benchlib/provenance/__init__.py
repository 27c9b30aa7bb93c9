"""Provenance: which kit commit, engine, model files and hardware produced a number."""

from benchlib.provenance._hardware import CPUInfo, GPUInfo, HardwareInfo, collect_hardware
from benchlib.provenance._model import FilesHash, hash_model_folder
from benchlib.provenance._software import (
    engine_version,
    environment_hash,
    git_state,
    installed_packages,
    python_version,
)

__all__ = [
    "CPUInfo",
    "FilesHash",
    "GPUInfo",
    "HardwareInfo",
    "collect_hardware",
    "engine_version",
    "environment_hash",
    "git_state",
    "hash_model_folder",
    "installed_packages",
    "python_version",
]
