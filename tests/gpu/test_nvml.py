"""Hardware capture through NVML on a real GPU (skipped where no NVIDIA driver is present;
run on a GPU machine: ``pytest tests/gpu``)."""

from __future__ import annotations

import pytest

from benchlib.provenance import collect_hardware


def test_nvml_capture_fills_every_field() -> None:
    info = collect_hardware()
    if not info.gpus:
        pytest.skip(info.nvml_error or "NVML sees no GPU")
    assert info.nvml_error is None  # a GPU NVML failed on is named here, not skipped
    assert info.gpu_count == len(info.gpus) >= 1
    assert info.driver_version and info.cuda_driver_version
    for gpu in info.gpus:
        assert gpu.name and gpu.uuid and gpu.uuid.startswith("GPU-")
        assert gpu.memory_total_gib > 1
        assert gpu.sm_clock_max_mhz and gpu.mem_clock_max_mhz
        assert gpu.power_limit_w and gpu.power_default_limit_w
        assert gpu.pcie_gen_max and gpu.pcie_width_max
        assert gpu.sm_clock_mhz and gpu.mem_clock_mhz and gpu.power_draw_w
        assert gpu.clock_event_reasons is not None and gpu.temperature_c is not None
        assert gpu.persistence_mode is not None and gpu.ecc_enabled is not None
