"""Lowering the CPU priority of an engine's busy-polling processes (``engine.nice``).

On a machine with fewer cores than an engine's busy loops, a process that polls shares a core
with the ones that stream: vLLM's CPU build runs its model in ``VLLM::Worker`` (its OpenMP
threads bound to a core) and schedules in ``VLLM::EngineCore``, which spins at ~80 % of a core
while it waits for the worker. On two cores that spin and the API server, which writes the
tokens to the sockets, take turns in the scheduler's slices: measured on the 2-core CI machine
(tiny model, concurrency 1), median TTFT 95–99 ms and every stream's chunks in one read; with
the EngineCore at nice 10, TTFT 8.0–9.2 ms, TPOT 2.7–2.9 ms and no stream in a burst. The
polling process still gets every cycle nobody else wants.

Processes are found by name in the engine's process group (``/proc/PID/comm``, which Linux
cuts to 15 bytes) and every thread of each is reniced: Linux keeps a nice value per thread.
Only a lower priority is asked for, which needs no privilege.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["COMM_LEN", "lower_priority", "lowered_lines"]

#: the bytes of a process name ``/proc/PID/comm`` keeps (TASK_COMM_LEN − 1)
COMM_LEN = 15


def _group_members(pgid: int, proc: Path) -> dict[int, str]:
    """pid → name of every process in group ``pgid``."""
    members = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            name = (entry / "comm").read_text().rstrip("\n")
        except OSError:  # gone meanwhile
            continue
        # the name in stat is in parentheses and may hold spaces: the fields follow the last ")"
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid:
            members[int(entry.name)] = name
    return members


def lower_priority(pgid: int, nice: Mapping[str, int], proc: Path = Path("/proc")
                   ) -> dict[str, int]:
    """Set every thread of each process of group ``pgid`` named in ``nice`` (by its full
    name or the 15 bytes Linux keeps of it) to that nice value. Returns, per name, how many
    threads were reniced (0: no such process in the group)."""
    done = dict.fromkeys(nice, 0)
    members = _group_members(pgid, proc)
    for name, value in nice.items():
        for pid, comm in members.items():
            if comm != name[:COMM_LEN]:
                continue
            try:
                tids = [int(t) for t in os.listdir(proc / str(pid) / "task")]
            except OSError:
                continue
            for tid in tids:
                try:
                    os.setpriority(os.PRIO_PROCESS, tid, value)
                    done[name] += 1
                except OSError:  # the thread ended meanwhile
                    pass
    return done


def lowered_lines(done: Mapping[str, int], nice: Mapping[str, int]) -> list[str]:
    """What :func:`lower_priority` did, a line per name, for the console and the run log."""
    return [f"{name}: {threads} threads at nice {nice[name]}" if threads else
            f"{name}: no such process in the engine's group; its priority is unchanged "
            "(engine.nice)" for name, threads in done.items()]
