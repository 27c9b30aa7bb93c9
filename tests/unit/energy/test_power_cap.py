"""The power cap as a scripted setting, against a fake NVML at its function boundary: read and
refused when off, set only with the switch and root, restored after, clocks and PCIe
recorded."""

from __future__ import annotations

from typing import Any

import pytest

from benchlib._exceptions import UsageError
from benchlib.energy._power_cap import PowerCap, read_setup


class FakeNvml:
    """NVML's functions over a table of GPUs (limits in mW, as NVML's)."""

    def __init__(self, limits_mw: list[int]) -> None:
        self.limits = list(limits_mw)
        self.calls: list[tuple[int, int]] = []

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA CMP 170HX"

    def nvmlDeviceGetPowerManagementLimit(self, h: int) -> int:
        return self.limits[h]

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: int) -> int:
        return 250_000

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h: int) -> tuple[int, int]:
        return 100_000, 250_000

    def nvmlDeviceSetPowerManagementLimit(self, h: int, mw: int) -> None:
        self.calls.append((h, mw))
        self.limits[h] = mw

    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int:
        return {1: 1410, 2: 1728}[kind]

    def nvmlDeviceGetMaxClockInfo(self, h: int, kind: int) -> int:
        return {1: 1500, 2: 1728}[kind]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return 2

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return 2

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return 16

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return 16


def test_the_setup_is_read_in_watts_with_clocks_and_pcie() -> None:
    (g,) = read_setup(FakeNvml([180_000]), [0])
    assert (g.power_limit_w, g.default_power_limit_w, g.max_power_limit_w) == (180, 250, 250)
    assert (g.mem_clock_mhz, g.pcie_gen, g.pcie_width) == (1728, 2, 16)
    assert g.name == "NVIDIA CMP 170HX"


def test_at_the_cap_nothing_is_set() -> None:
    nvml = FakeNvml([180_000])
    with PowerCap(nvml, [0], 180, set_it=False).held() as setup:
        assert setup[0].power_limit_w == 180
    assert nvml.calls == []


@pytest.mark.parametrize(("set_it", "root", "field"), [
    (False, True, "hardware.power_limit_w"), (True, False, "hardware.set_power_limit")])
def test_off_the_cap_is_refused_without_the_switch_and_root(set_it: bool, root: bool,
                                                            field: str) -> None:
    nvml = FakeNvml([250_000])
    with pytest.raises(UsageError) as err, \
            PowerCap(nvml, [0], 180, set_it=set_it, is_root=root).held():
        pass
    assert err.value.field == field and nvml.calls == []


def test_a_cap_outside_the_boards_range_is_refused() -> None:
    with pytest.raises(UsageError, match="allows 100–250 W"), \
            PowerCap(FakeNvml([250_000]), [0], 50, set_it=True, is_root=True).held():
        pass


def test_set_with_the_switch_as_root_and_restored_after_a_failure() -> None:
    nvml = FakeNvml([250_000, 180_000])
    cap = PowerCap(nvml, [0, 1], 180, set_it=True, is_root=True)
    seen: list[Any] = []
    with pytest.raises(RuntimeError), cap.held() as setup:
        seen.extend(setup)
        raise RuntimeError("the run failed")
    assert [g.power_limit_w for g in seen] == [180, 180]
    # only the GPU that was off was set, and it is back at its own limit
    assert nvml.calls == [(0, 180_000), (0, 250_000)]
    assert nvml.limits == [250_000, 180_000] and cap.restored == [(0, 250.0)]
