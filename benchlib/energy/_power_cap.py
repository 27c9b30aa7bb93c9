"""The GPUs' power limit as a scripted setting: read, checked against the recipe's, set only
when asked (as root), restored after; and the setup a seed names recorded beside it (clocks,
PCIe link).

What: :func:`read_setup` reads each GPU's power limit (current, default, allowed range), its
SM and memory clocks (current and maximum) and its PCIe link (current and maximum generation
and width) through NVML. :class:`PowerCap` holds a run to ``hardware.power_limit_w``: a GPU
at another limit is refused (:class:`~benchlib.UsageError` naming the field) unless the recipe
sets ``hardware.set_power_limit`` and the process is root, in which case the limit is set
with ``nvmlDeviceSetPowerManagementLimit`` and each GPU's earlier limit is put back when the
run leaves the block, failed or not.

Why: seed 003 ran its CMP 170HX capped at 180 W; speed under a cap is not speed without one,
so a recipe that names the cap must run under it or say it did not. Setting a limit changes
the machine for everyone on it, so it is never done without the explicit switch and root.

The NVML boundary is the ``nvml`` argument: ``pynvml`` (nvidia-ml-py) itself on a machine with
GPUs; the tests pass an object with the same functions. Limits are in mW in NVML, W here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib._exceptions import UsageError

__all__ = ["GpuSetup", "PowerCap", "PowerCapRecord", "read_setup"]

_W = 1000.0  # NVML's milliwatts per watt
_CLOCK_SM, _CLOCK_MEM = 1, 2  # NVML_CLOCK_SM, NVML_CLOCK_MEM


class GpuSetup(BaseModel):
    """One GPU's power limit, clocks and PCIe link as NVML reports them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int
    name: str
    power_limit_w: float = Field(description="the limit in force")
    default_power_limit_w: float = Field(description="the board's default limit")
    min_power_limit_w: float
    max_power_limit_w: float
    sm_clock_mhz: int
    max_sm_clock_mhz: int
    mem_clock_mhz: int
    max_mem_clock_mhz: int
    pcie_gen: int
    max_pcie_gen: int
    pcie_width: int
    max_pcie_width: int


class PowerCapRecord(BaseModel):
    """What 02_launch did with ``hardware.power_limit_w``, kept in every sidecar's
    provenance (``engine.power_cap``)."""

    model_config = ConfigDict(extra="forbid")

    limit_w: float = Field(description="the recipe's hardware.power_limit_w")
    set_power_limit: bool = Field(description="the recipe's hardware.set_power_limit")
    status: Literal["held", "set", "not checked"] = Field(
        description="held: every GPU was at the limit already; set: the kit set it (and puts "
                    "each GPU's earlier limit back when the engine stops); not checked: NVML "
                    "could not be read (reason)")
    reason: str = Field("", description="why it was not checked")
    gpus: list[GpuSetup] = Field(default_factory=list, description="each GPU's power limit, "
                                 "clocks and PCIe link under the cap, as the engine starts")
    earlier_w: dict[int, float] = Field(default_factory=dict, description="GPU index → the "
                                        "limit it had before the kit set it")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_setup(nvml: Any, indexes: Sequence[int]) -> list[GpuSetup]:
    """Each GPU's setup (module doc); NVML must be initialised."""
    out = []
    for i in indexes:
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        lo, hi = nvml.nvmlDeviceGetPowerManagementLimitConstraints(h)
        out.append(GpuSetup(
            index=i, name=_text(nvml.nvmlDeviceGetName(h)),
            power_limit_w=nvml.nvmlDeviceGetPowerManagementLimit(h) / _W,
            default_power_limit_w=nvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / _W,
            min_power_limit_w=lo / _W, max_power_limit_w=hi / _W,
            sm_clock_mhz=nvml.nvmlDeviceGetClockInfo(h, _CLOCK_SM),
            max_sm_clock_mhz=nvml.nvmlDeviceGetMaxClockInfo(h, _CLOCK_SM),
            mem_clock_mhz=nvml.nvmlDeviceGetClockInfo(h, _CLOCK_MEM),
            max_mem_clock_mhz=nvml.nvmlDeviceGetMaxClockInfo(h, _CLOCK_MEM),
            pcie_gen=nvml.nvmlDeviceGetCurrPcieLinkGeneration(h),
            max_pcie_gen=nvml.nvmlDeviceGetMaxPcieLinkGeneration(h),
            pcie_width=nvml.nvmlDeviceGetCurrPcieLinkWidth(h),
            max_pcie_width=nvml.nvmlDeviceGetMaxPcieLinkWidth(h)))
    return out


class PowerCap:
    """Holds the GPUs ``indexes`` to ``watts`` for a block (module doc)."""

    def __init__(self, nvml: Any, indexes: Sequence[int], watts: float, *, set_it: bool,
                 is_root: bool | None = None) -> None:
        self.nvml, self.indexes, self.watts, self.set_it = nvml, list(indexes), watts, set_it
        self.is_root = os.geteuid() == 0 if is_root is None else is_root
        self.restored: list[tuple[int, float]] = []
        #: the GPUs the block set, with their earlier limits (W)
        self.changed: dict[int, float] = {}

    @contextmanager
    def held(self) -> Iterator[list[GpuSetup]]:
        """Check (or set) the limit, yield each GPU's setup under it, put back what was set."""
        before = read_setup(self.nvml, self.indexes)
        off = [g for g in before if abs(g.power_limit_w - self.watts) > 0.5]
        for g in off:
            if not self.set_it:
                raise UsageError("hardware.power_limit_w", f"GPU {g.index} ({g.name}) is at "
                                 f"{g.power_limit_w:.0f} W, not {self.watts:.0f} W: set it "
                                 "(nvidia-smi -pl) or set hardware.set_power_limit and run "
                                 "as root")
            if not self.is_root:
                raise UsageError("hardware.set_power_limit", "setting a GPU's power limit "
                                 "needs root: run as root or set the limit beforehand")
            if not g.min_power_limit_w <= self.watts <= g.max_power_limit_w:
                raise UsageError("hardware.power_limit_w", f"GPU {g.index} allows "
                                 f"{g.min_power_limit_w:.0f}–{g.max_power_limit_w:.0f} W, "
                                 f"not {self.watts:.0f} W")
        changed: list[GpuSetup] = []
        try:
            for g in off:
                h = self.nvml.nvmlDeviceGetHandleByIndex(g.index)
                self.nvml.nvmlDeviceSetPowerManagementLimit(h, round(self.watts * _W))
                changed.append(g)
                self.changed[g.index] = g.power_limit_w
            yield read_setup(self.nvml, self.indexes)
        finally:
            for g in changed:
                h = self.nvml.nvmlDeviceGetHandleByIndex(g.index)
                self.nvml.nvmlDeviceSetPowerManagementLimit(h, round(g.power_limit_w * _W))
                self.restored.append((g.index, g.power_limit_w))
