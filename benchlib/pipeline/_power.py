"""The recipe's GPU power limit, held while the engine a run starts is alive.

What: :func:`hold_power_cap` reads ``hardware.power_limit_w`` against the GPUs the engine
will use (``CUDA_VISIBLE_DEVICES`` from ``engine.env`` or the kit's environment, the first
``hardware.gpu_count``; :func:`~benchlib.energy.choose_gpus`) through NVML, with
:class:`~benchlib.energy._power_cap.PowerCap`: a GPU at another limit stops the run before
the engine starts (:class:`~benchlib.UsageError` naming ``hardware.power_limit_w``), unless
``hardware.set_power_limit`` and root, when the limit is set and each GPU's earlier one put
back when the engine stops (:class:`~benchlib.pipeline._engine.RunEngine` holds the block
open). Each GPU's limit, clocks and PCIe link under the cap go into every later sidecar's
provenance (``engine.power_cap``); :func:`power_cap_line` is ``--check``'s line.

Why: seed 003 ran its CMP 170HX capped at 180 W; speed under a cap is not speed without it,
and a cap set by hand is forgotten. Where NVML cannot be read (no GPU, no driver) the record
says ``not checked`` and why, and the run goes on: the hardware section's other expectations
are flagged the same way, not enforced.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from benchlib.energy import choose_gpus
from benchlib.energy._power_cap import PowerCap, PowerCapRecord
from benchlib.recipe import Recipe

__all__ = ["hold_power_cap", "open_nvml", "power_cap_line"]


def open_nvml() -> Any:
    """``pynvml``, initialised (raises where NVML cannot be read)."""
    import pynvml

    pynvml.nvmlInit()
    return pynvml


def _indexes(nvml: Any, gpus: list[int | str] | None) -> list[int]:
    if gpus is None:
        return list(range(nvml.nvmlDeviceGetCount()))
    return [g if isinstance(g, int) else int(nvml.nvmlDeviceGetIndex(
        nvml.nvmlDeviceGetHandleByUUID(g))) for g in gpus]


def hold_power_cap(recipe: Recipe, stack: ExitStack, log: Callable[[str], None],
                   opener: Callable[[], Any] | None = None) -> PowerCapRecord | None:
    """Check (or set) the recipe's power limit and keep it on ``stack`` (module doc); None
    when the recipe names no limit."""
    hw = recipe.hardware
    if hw.power_limit_w is None:
        return None
    try:
        nvml = (opener or open_nvml)()
    except Exception as exc:  # ImportError, NVMLError: what NVML said is the reason
        record = PowerCapRecord(limit_w=hw.power_limit_w, set_power_limit=hw.set_power_limit,
                                status="not checked", reason=f"NVML: {exc}")
        log(f"power limit {hw.power_limit_w:.0f} W not checked ({record.reason})")
        return record
    env = {**os.environ, **recipe.engine.env}
    indexes = _indexes(nvml, choose_gpus(env, hw.gpu_count).gpus)
    cap = PowerCap(nvml, indexes, hw.power_limit_w, set_it=hw.set_power_limit)

    def said() -> None:
        for i, w in cap.restored:
            log(f"GPU {i}: power limit put back to {w:.0f} W")
    stack.callback(said)  # after the block below put the limits back (last in, first out)
    setups = stack.enter_context(cap.held())
    record = PowerCapRecord(limit_w=hw.power_limit_w, set_power_limit=hw.set_power_limit,
                            status="set" if cap.changed else "held", gpus=setups,
                            earlier_w=dict(cap.changed))
    for g in setups:
        log(f"GPU {g.index} ({g.name}): power limit {g.power_limit_w:.0f} W"
            + (f" (set, from {cap.changed[g.index]:.0f} W)" if g.index in cap.changed else "")
            + f", SM {g.sm_clock_mhz}/{g.max_sm_clock_mhz} MHz, memory {g.mem_clock_mhz}/"
            f"{g.max_mem_clock_mhz} MHz, PCIe gen {g.pcie_gen}/{g.max_pcie_gen} "
            f"x{g.pcie_width}/{g.max_pcie_width}")
    return record


def power_cap_line(recipe: Recipe) -> str | None:
    """``--check``'s line for the recipe's power limit; None without one."""
    hw = recipe.hardware
    if hw.power_limit_w is None:
        return None
    action = ("set through NVML if a GPU is off it (root needed), put back when the engine "
              "stops" if hw.set_power_limit else "a GPU at another limit stops the run "
              "(hardware.set_power_limit: true sets it, as root)")
    return (f"power limit: {hw.power_limit_w:.0f} W read through NVML on the engine's GPUs "
            f"as it starts; {action}; each GPU's limit, clocks and PCIe link recorded in the "
            "sidecars' provenance")
