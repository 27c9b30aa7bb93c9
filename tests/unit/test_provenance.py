"""Provenance capture: the CPU machine here; the real NVML capture code run against a fake
``pynvml`` answering from an H200 capture (tests/data/nvml_h200.json, taken with
``tests/gpu/test_nvml.py``'s code on an NVIDIA H200; its UUID and kernel build anonymised;
the clocks now, power draw, temperature and modes from the H200 run in tests/data/h200_run);
model hashes and the kit's git state."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from benchlib.provenance import HardwareInfo, collect_hardware, git_state, hash_model_folder

DATA = Path(__file__).resolve().parents[1] / "data"
H200 = json.loads((DATA / "nvml_h200.json").read_text())


class FakeNVMLError(Exception):
    """Stands in for ``pynvml.NVMLError``: NVML's own error type, not a Python builtin."""


class FakeNVML:
    """The ``pynvml`` calls the capture makes, answering in NVML's raw units (bytes, mW, CUDA
    13.0 as 13000, names as bytes like older bindings) from capture records.

    ``fail`` maps ``(function name, GPU index or None)`` to the message of an NVMLError that
    call raises; handles are the GPU indices.
    """

    NVML_CLOCK_GRAPHICS = 0  # pynvml's values
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0
    NVMLError = FakeNVMLError
    #: NVML's clock event reason bits, by the names the capture records
    EVENT_BITS: ClassVar[dict[str, int]] = {"gpu_idle": 0x1, "sw_power_cap": 0x4,
                                            "hw_slowdown": 0x8}

    def __init__(self, capture: dict[str, Any], gpus: list[dict[str, Any]] | None = None,
                 fail: dict[tuple[str, int | None], str] | None = None) -> None:
        self.capture = capture
        self.gpus = capture["gpus"] if gpus is None else gpus
        self.fail = fail or {}
        self.shutdowns = 0

    def _answer(self, call: str, index: int | None = None) -> dict[str, Any]:
        if (call, index) in self.fail:
            raise FakeNVMLError(self.fail[call, index])
        return self.gpus[index] if index is not None else self.capture

    def nvmlInit(self) -> None:
        self._answer("nvmlInit")

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self._answer("nvmlSystemGetDriverVersion")["driver_version"])

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        major, minor = self._answer("nvmlSystemGetCudaDriverVersion")["cuda_driver_version"].split(".")
        return int(major) * 1000 + int(minor) * 10

    def nvmlDeviceGetCount(self) -> int:
        self._answer("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._answer("nvmlDeviceGetHandleByIndex", index)
        return index

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        total = round(self._answer("nvmlDeviceGetMemoryInfo", h)["memory_total_gib"] * 2**30)
        return SimpleNamespace(total=total, free=total, used=0)

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return str(self._answer("nvmlDeviceGetName", h)["name"]).encode()

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return str(self._answer("nvmlDeviceGetUUID", h)["uuid"])

    def nvmlDeviceGetMaxClockInfo(self, h: int, clock: int) -> int:
        gpu = self._answer("nvmlDeviceGetMaxClockInfo", h)
        return int(gpu["sm_clock_max_mhz" if clock == self.NVML_CLOCK_SM else "mem_clock_max_mhz"])

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return round(float(self._answer("nvmlDeviceGetEnforcedPowerLimit", h)["power_limit_w"]) * 1000)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: int) -> int:
        gpu = self._answer("nvmlDeviceGetPowerManagementDefaultLimit", h)
        return round(float(gpu["power_default_limit_w"]) * 1000)

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return int(self._answer("nvmlDeviceGetCurrPcieLinkGeneration", h)["pcie_gen"])

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return int(self._answer("nvmlDeviceGetCurrPcieLinkWidth", h)["pcie_width"])

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return int(self._answer("nvmlDeviceGetMaxPcieLinkGeneration", h)["pcie_gen_max"])

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return int(self._answer("nvmlDeviceGetMaxPcieLinkWidth", h)["pcie_width_max"])

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        gpu = self._answer("nvmlDeviceGetClockInfo", h)
        return int(gpu[{0: "graphics_clock_mhz", 1: "sm_clock_mhz", 2: "mem_clock_mhz"}[clock]])

    def nvmlDeviceGetApplicationsClock(self, h: int, clock: int) -> int:
        gpu = self._answer("nvmlDeviceGetApplicationsClock", h)
        return int(gpu["app_sm_clock_mhz" if clock == self.NVML_CLOCK_SM else "app_mem_clock_mhz"])

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        gpu = self._answer("nvmlDeviceGetCurrentClocksEventReasons", h)
        return sum(self.EVENT_BITS[name] for name in gpu["clock_event_reasons"])

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return round(float(self._answer("nvmlDeviceGetPowerUsage", h)["power_draw_w"]) * 1000)

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return int(self._answer("nvmlDeviceGetTemperature", h)["temperature_c"])

    def nvmlDeviceGetPersistenceMode(self, h: int) -> int:
        return int(self._answer("nvmlDeviceGetPersistenceMode", h)["persistence_mode"])

    def nvmlDeviceGetEccMode(self, h: int) -> list[int]:
        enabled = int(self._answer("nvmlDeviceGetEccMode", h)["ecc_enabled"])
        return [enabled, enabled]  # current, pending

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        enabled = int(self._answer("nvmlDeviceGetMigMode", h)["mig_enabled"])
        return [enabled, enabled]


def two_h200s() -> list[dict[str, Any]]:
    """The captured H200 twice, as GPUs 0 and 1 with their own (fake) UUIDs."""
    return [{**H200["gpus"][0], "index": i, "uuid": f"GPU-00000000-0000-0000-0000-00000000000{i}"}
            for i in range(2)]


def install(monkeypatch: pytest.MonkeyPatch, fake: FakeNVML | None) -> None:
    """``import pynvml`` inside the capture gets ``fake``; ``None`` makes it an ImportError."""
    monkeypatch.setitem(sys.modules, "pynvml", fake)


def test_nvml_capture_of_an_h200(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNVML(H200)
    install(monkeypatch, fake)
    info = collect_hardware()
    assert info.nvml_error is None and info.gpu_count == 1 and fake.shutdowns == 1
    gpu = info.gpus[0]
    assert gpu.index == 0 and gpu.name == "NVIDIA H200"
    assert gpu.uuid == "GPU-00000000-0000-0000-0000-000000000000"
    assert gpu.memory_total_gib == 140.4
    assert (gpu.sm_clock_max_mhz, gpu.mem_clock_max_mhz) == (1980, 3201)
    assert (gpu.power_limit_w, gpu.power_default_limit_w) == (700.0, 700.0)
    assert (gpu.pcie_gen, gpu.pcie_width, gpu.pcie_gen_max, gpu.pcie_width_max) == (5, 16, 5, 16)
    assert (info.driver_version, info.cuda_driver_version) == ("580.159.04", "13.0")
    # idle at the capture: the SM clock parked, the application clocks the maxima
    assert (gpu.sm_clock_mhz, gpu.mem_clock_mhz, gpu.graphics_clock_mhz) == (345, 3201, 345)
    assert (gpu.app_sm_clock_mhz, gpu.app_mem_clock_mhz) == (1980, 3201)
    assert gpu.clock_event_reasons == ["gpu_idle"]
    assert (gpu.power_draw_w, gpu.temperature_c) == (77.834, 36)
    assert (gpu.persistence_mode, gpu.ecc_enabled, gpu.mig_enabled) == (True, True, False)
    # the capture of the fake reproduces the real capture it answers from
    assert info.model_dump(include={"gpus", "gpu_count", "driver_version",
                                    "cuda_driver_version", "nvml_error"}) == \
        HardwareInfo.model_validate(H200).model_dump(
            include={"gpus", "gpu_count", "driver_version", "cuda_driver_version", "nvml_error"})


def test_unsupported_queries_leave_only_their_fields_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, FakeNVML(H200, fail={
        ("nvmlDeviceGetPowerManagementDefaultLimit", 0): "Not Supported",
        ("nvmlDeviceGetCurrPcieLinkGeneration", 0): "Not Supported",
        ("nvmlDeviceGetMigMode", 0): "Not Supported",  # a GPU without MIG
        ("nvmlDeviceGetApplicationsClock", 0): "Not Supported",
        ("nvmlSystemGetCudaDriverVersion", None): "Function Not Found"}))
    info = collect_hardware()
    gpu = info.gpus[0]
    assert info.nvml_error is None and info.cuda_driver_version is None
    assert gpu.power_default_limit_w is None and gpu.pcie_gen is None
    assert gpu.mig_enabled is None and gpu.app_sm_clock_mhz is None
    assert gpu.ecc_enabled is True and gpu.sm_clock_mhz == 345
    assert gpu.power_limit_w == 700.0 and gpu.pcie_gen_max == 5 and gpu.name == "NVIDIA H200"


@pytest.mark.parametrize("call", ["nvmlDeviceGetHandleByIndex", "nvmlDeviceGetMemoryInfo",
                                  "nvmlDeviceGetName"])
@pytest.mark.parametrize("bad", [0, 1])
def test_a_failing_gpu_is_recorded_not_raised(monkeypatch: pytest.MonkeyPatch, call: str,
                                              bad: int) -> None:
    """A GPU that fell off the bus is named in ``nvml_error``; the other GPU is still recorded
    and NVML is shut down."""
    fake = FakeNVML(H200, two_h200s(), fail={(call, bad): "GPU is lost"})
    install(monkeypatch, fake)
    info = collect_hardware()
    assert info.nvml_error == f"NVML failed on GPU {bad}: GPU is lost"
    assert [g.index for g in info.gpus] == [1 - bad] and info.gpu_count == 1
    assert info.gpus[0].uuid == f"GPU-00000000-0000-0000-0000-00000000000{1 - bad}"
    assert info.driver_version == "580.159.04" and fake.shutdowns == 1


@pytest.mark.parametrize(("fake", "error"), [
    (None, "nvidia-ml-py is not installed"),
    (FakeNVML(H200, fail={("nvmlInit", None): "Driver Not Loaded"}),
     "NVML unavailable: Driver Not Loaded"),
    (FakeNVML(H200, fail={("nvmlDeviceGetCount", None): "Unknown Error"}),
     "NVML could not count GPUs: Unknown Error"),
], ids=["not-installed", "init-fails", "count-fails"])
def test_no_nvml_gives_a_clean_no_gpu_record(monkeypatch: pytest.MonkeyPatch,
                                             fake: FakeNVML | None, error: str) -> None:
    install(monkeypatch, fake)
    info = collect_hardware()
    assert info.nvml_error == error
    assert info.gpus == [] and info.gpu_count == 0
    assert info.cpu.logical_cores >= 1 and info.kernel


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
