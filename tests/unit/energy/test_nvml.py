"""The NVML reader against a stand-in for ``pynvml`` that answers as an H200 did (driver
580.159.04: the energy counter in mJ, the instantaneous power field 186 as an unsigned int
of mW, ``nvmlDeviceGetPowerUsage`` a 1 s average, clock event mask 0x4 under load), and as
older GPUs do (no instantaneous field; no energy counter). Also which GPUs a recipe's engine
uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from benchlib.energy import NvmlReader, Reading, choose_gpus, clock_event_names, open_reader


class NotSupported(Exception):
    """As pynvml's NVMLError_NotSupported."""


@dataclass
class FakeGpu:
    uuid: str
    name: str = "NVIDIA H200"
    energy_mj: int | None = 2_869_897
    instant_mw: int | None = 77_315
    usage_mw: int = 77_476
    sm: int = 345
    mem: int = 3201
    reasons: int = 0x1


@dataclass
class FakeNvml:
    gpus: list[FakeGpu]
    calls: list[str] = field(default_factory=list)
    NVML_CLOCK_SM: int = 1
    NVML_CLOCK_MEM: int = 2
    NVML_FI_DEV_POWER_INSTANT: int = 186

    def nvmlInit(self) -> None:
        self.calls.append("init")

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeGpu:
        return self.gpus[i]

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> FakeGpu:
        return next(g for g in self.gpus if g.uuid == uuid)

    def nvmlDeviceGetName(self, h: FakeGpu) -> bytes:
        return h.name.encode()

    def nvmlDeviceGetTotalEnergyConsumption(self, h: FakeGpu) -> int:
        if h.energy_mj is None:
            raise NotSupported
        return h.energy_mj

    def nvmlDeviceGetFieldValues(self, h: FakeGpu, ids: list[int]) -> list[Any]:
        assert ids == [186]
        ok = h.instant_mw is not None
        return [SimpleNamespace(nvmlReturn=0 if ok else 3, valueType=1,
                                value=SimpleNamespace(uiVal=h.instant_mw or 0))]

    def nvmlDeviceGetPowerUsage(self, h: FakeGpu) -> int:
        return h.usage_mw

    def nvmlDeviceGetClockInfo(self, h: FakeGpu, which: int) -> int:
        return h.sm if which == self.NVML_CLOCK_SM else h.mem

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: FakeGpu) -> int:
        return h.reasons


def test_an_h200_as_nvml_answered() -> None:
    gpu = FakeGpu("GPU-0")
    nvml = FakeNvml([gpu])
    reader = NvmlReader(None, nvml=nvml)
    (device,) = reader.devices
    assert device.name == "GPU 0 (NVIDIA H200)" and device.power_source == "instant"
    assert device.counter_unit_j == 1e-3 and device.counter_wrap is None
    assert reader.read() == (Reading(counter=2_869_897, power_w=77.315, sm_clock_mhz=345,
                                     mem_clock_mhz=3201, throttle=("gpu_idle",)),)
    gpu.energy_mj, gpu.instant_mw, gpu.sm, gpu.reasons = 3_146_840, 922_632, 1980, 0x4
    (loaded,) = reader.read()
    assert loaded.power_w == 922.632 and loaded.throttle == ("sw_power_cap",)
    reader.close()
    assert nvml.calls == ["init", "shutdown"]


def test_older_gpus_power_usage_and_no_counter() -> None:
    old = FakeGpu("GPU-1", name="Tesla P100", energy_mj=None, instant_mw=None)
    reader = NvmlReader(None, nvml=FakeNvml([old]))
    assert reader.devices[0].power_source == "power_usage"
    (r,) = reader.read()
    assert r.counter is None and r.power_w == 77.476


def test_the_engines_gpus_by_index_or_uuid() -> None:
    nvml = FakeNvml([FakeGpu("GPU-a"), FakeGpu("GPU-b", name="NVIDIA H100"),
                     FakeGpu("GPU-c")])
    assert [d.name for d in NvmlReader([2, 1], nvml=nvml).devices] == [
        "GPU 2 (NVIDIA H200)", "GPU 1 (NVIDIA H100)"]
    assert [d.name for d in NvmlReader(["GPU-b"], nvml=nvml).devices] == [
        "GPU GPU-b (NVIDIA H100)"]
    with pytest.raises(RuntimeError, match="no GPU 7"):
        NvmlReader([7], nvml=nvml)
    assert nvml.calls[-1] == "shutdown"  # a failed start lets NVML go again
    why = open_reader("gpu", [], nvml=nvml)
    assert isinstance(why, str) and "no GPU" in why


def test_clock_event_names() -> None:
    assert clock_event_names(0x1 | 0x4 | 0x40) == ("gpu_idle", "sw_power_cap",
                                                   "hw_thermal_slowdown")
    assert clock_event_names(0) == ()


@pytest.mark.parametrize("env,count,gpus,flagged", [
    ({}, None, None, "not known"),
    ({}, 2, [0, 1], None),
    ({"CUDA_VISIBLE_DEVICES": "3,1"}, 1, [3], "PCI bus order"),
    ({"CUDA_VISIBLE_DEVICES": "3,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, None, [3, 1], None),
    ({"CUDA_VISIBLE_DEVICES": "GPU-b,GPU-a"}, 2, ["GPU-b", "GPU-a"], None),
    ({"CUDA_VISIBLE_DEVICES": "0,-1,2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, None, [0], None),
    ({"CUDA_VISIBLE_DEVICES": "5", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, 2, [5], "names 1"),
])
def test_which_gpus_an_engine_uses(env: dict[str, str], count: int | None,
                                   gpus: list[int | str] | None, flagged: str | None) -> None:
    choice = choose_gpus(env, count)
    assert choice.gpus == gpus
    if flagged is None:
        assert choice.flags == []
    else:
        assert any(flagged in f for f in choice.flags)
