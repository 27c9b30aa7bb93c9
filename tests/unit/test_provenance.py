"""Provenance capture: the CPU machine here, and a real H200 capture (tests/data, taken with
``tests/gpu/test_nvml.py``'s code on an NVIDIA H200) against the same schema."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.provenance import HardwareInfo, collect_hardware, git_state, hash_model_folder

DATA = Path(__file__).resolve().parents[1] / "data"


def test_cpu_machine_capture_never_raises() -> None:
    info = collect_hardware()
    assert info.cpu.logical_cores >= 1 and info.cpu.memory_total_gib > 0
    assert info.kernel and info.os
    if info.nvml_error:
        assert info.gpus == [] and info.gpu_count == 0


def test_real_h200_capture_fits_the_schema() -> None:
    info = HardwareInfo.model_validate(json.loads((DATA / "nvml_h200.json").read_text()))
    gpu = info.gpus[0]
    assert gpu.name == "NVIDIA H200" and gpu.memory_total_gib > 139
    assert gpu.power_limit_w == 700.0 and (gpu.pcie_gen_max, gpu.pcie_width_max) == (5, 16)
    assert info.driver_version == "580.159.04" and info.cuda_driver_version == "13.0"


def test_model_hash_changes_with_content(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "x").write_text("ignored")
    first = hash_model_folder(tmp_path)
    assert first.files == 1
    (tmp_path / "config.json").write_text('{"a": 1}')
    assert hash_model_folder(tmp_path).sha256 != first.sha256


def test_git_state_of_the_kit() -> None:
    commit, dirty = git_state(Path(__file__).resolve().parents[2])
    assert commit is not None and len(commit) == 40 and dirty is not None
