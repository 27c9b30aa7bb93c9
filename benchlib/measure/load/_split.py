"""How a run's load is split among workers: how many, which requests each sends, and the
result's account of them.

The partition (:func:`partition`): the run's one seeded schedule — the same requests, bodies
and release offsets one process would send — is dealt round-robin, request ``i`` to worker
``i mod N``, and the concurrency limit is split (worker ``k`` holds ``⌊C/N⌋`` slots, one more
for the first ``C mod N``). With no limit every request is released at its own time, exactly
as one process releases it; under a limit each worker fills its own slots, so when requests
differ in length the order they get a slot can differ from one process's.

The default count (:func:`plan_workers`) is measured, not guessed: one process reads
:data:`STREAMS_PER_WORKER` streams within the accuracy the timing self-check holds it to
(``benchmarks/RESULTS.md``), so a run gets enough workers that none reads more, at most one
per CPU; each worker's own self-check in the result then says whether it kept up.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib.measure.wire._timing import Timing

if TYPE_CHECKING:
    from benchlib.measure.workload._config import MeasureConfig

__all__ = ["LATE_START_MS", "STREAMS_PER_WORKER", "Shard", "WorkerReport", "WorkerSplit",
           "WorkersInfo", "auto_workers", "cpu_count", "partition", "plan_workers"]

#: streams one client process reads with a p99 TTFT error within 2 ms of the wire truth:
#: ``python benchmarks/workers_scaling.py`` on the 2-core CI machine kind (first chunk 80 ms,
#: a 3-token chunk every 10 ms): +0.01 ms at 64 and 128 streams, +3.4 to +3.6 ms at 256
STREAMS_PER_WORKER = 128

#: a worker whose first request went out later than this after the common start sent its
#: share shifted against the others' (the start reached it late, or its loop was busy); the
#: event loop's own timer wakes within about a millisecond on a loaded host
LATE_START_MS = 5.0


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def auto_workers(streams: int, cpus: int) -> tuple[int, str]:
    """The default worker count for ``streams`` concurrent streams, and why: enough that none
    reads more than :data:`STREAMS_PER_WORKER`, but at most one per CPU less one (the driver
    and the kernel's network stack need one; and a worker on a core the server needs slows
    the server: on 2 cores shared with the scripted server, 2 workers read 1,024 streams no
    better than one, see ``benchmarks/RESULTS.md``)."""
    need = max(1, math.ceil(streams / STREAMS_PER_WORKER))
    room = max(1, cpus - 1)
    if need <= room:
        return need, (f"{streams} streams, at most {STREAMS_PER_WORKER} per worker (what one "
                      "process reads within 2 ms, measured)")
    return room, (f"{streams} streams want {need} workers of {STREAMS_PER_WORKER}; "
                  f"{room} on the {cpus} CPUs here (one left to the driver and the network "
                  "stack): for more, send from more hosts (--ray-address)")


@dataclass(frozen=True, slots=True)
class Shard:
    """A worker's share of the run: its requests' run-wide indices and release offsets, its
    concurrency slots and its warmups."""

    worker: int
    indices: tuple[int, ...]
    offsets: tuple[float, ...]
    max_concurrency: int | None
    num_warmups: int


def partition(offsets: Sequence[float], max_concurrency: int | None, num_warmups: int,
              workers: int) -> list[Shard]:
    """The run's schedule dealt to ``workers`` (see the module docstring); worker 0 sends
    every warmup."""
    if not 1 <= workers <= max(1, len(offsets)) or (
            max_concurrency is not None and workers > max_concurrency):
        raise ValueError(f"{workers} workers for {len(offsets)} requests and "
                         f"{max_concurrency} slots: each needs one of both")
    shards = []
    for k in range(workers):
        idx = tuple(range(k, len(offsets), workers))
        slots = None
        if max_concurrency is not None:
            slots = max_concurrency // workers + (k < max_concurrency % workers)
        shards.append(Shard(k, idx, tuple(offsets[i] for i in idx), slots,
                            num_warmups if k == 0 else 0))
    return shards


class WorkerReport(BaseModel):
    """One worker: where it ran, its share, and its own timing self-check."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    worker: int = Field(description="the worker's number (request i went to worker i mod N)")
    host: str = Field(description="the host it ran on")
    requests: int = Field(description="requests in its share of the schedule")
    max_concurrency: int | None = Field(description="its share of the concurrency limit")
    clock_offset_ms: float = Field(
        description="its host's wall clock minus the driver's, measured by round trips (a "
                    "Ray worker); 0 for a local process, which shares the driver's clock")
    clock_offset_uncertainty_ms: float = Field(
        description="half the shortest round trip of that measurement: run-level times "
                    "(duration, throughput) are this uncertain; per-request times (TTFT, TPOT, "
                    "ITL, E2EL) are each taken on one host and need no sync")
    start_lag_ms: float | None = Field(
        None, description="how late its first request was released after the common start "
                          "instant (null: it sent none); above late_start_limit_ms its "
                          "arrivals are shifted against the other workers'")
    timing: Timing = Field(description="the timing self-check over its requests alone")


class WorkersInfo(BaseModel):
    """The result's ``workers`` block: how the load was split and whether each worker kept up."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(description="client processes that sent the load")
    backend: Literal["processes", "ray"] = Field(
        description="local processes, or Ray actors on a cluster's nodes")
    chosen: str = Field(description="why this many: given, or the default's reasoning")
    hosts: int = Field(description="distinct hosts (host names) the workers ran on")
    nodes: int = Field(description="distinct Ray nodes they ran on (1 for local processes; "
                                   "a test cluster can run several nodes on one host)")
    client_bound_workers: list[int] = Field(
        description="workers whose own reads lagged (their timing.client_bound): add workers "
                    "or hosts")
    late_start_workers: list[int] = Field(
        default_factory=list,
        description="workers whose first request went out more than late_start_limit_ms "
                    "after the common start: the start reached them late or their loop was "
                    "busy, so the schedule the server saw is not the seeded one")
    late_start_limit_ms: float = Field(LATE_START_MS, description="that limit")
    workers: list[WorkerReport] = Field(description="each worker's share and timing")


@dataclass(frozen=True, slots=True)
class WorkerSplit:
    """How many workers a run gets, of which kind, and why. A default over Ray is raised
    to one per node of the cluster once connected (``per_node``)."""

    count: int
    chosen: str
    backend: Literal["processes", "ray"]
    ray_address: str | None = None
    streams: int = 1
    per_node: bool = False


def plan_workers(cfg: MeasureConfig) -> WorkerSplit:
    """The split of ``cfg``'s run: ``workers`` as given, else the default for its streams
    (the concurrency limit, or every prompt when there is none)."""
    streams = min(cfg.num_prompts, cfg.max_concurrency or cfg.num_prompts)
    backend: Literal["processes", "ray"] = "ray" if cfg.ray_address else "processes"
    if cfg.workers is not None:
        return WorkerSplit(cfg.workers, "given", backend, cfg.ray_address, streams)
    if cfg.max_concurrency is None and not math.isinf(cfg.request_rate) and not cfg.ray_address:
        return WorkerSplit(1, "a request rate without a concurrency limit: the streams in "
                           "flight are not known before the run (pass --workers N, or a "
                           "--max-concurrency)", backend, None, streams)
    if cfg.ray_address:
        need = max(1, math.ceil(streams / STREAMS_PER_WORKER))
        return WorkerSplit(need, f"{streams} streams at most {STREAMS_PER_WORKER} per worker, "
                           "at least one per node", backend, cfg.ray_address, streams,
                           per_node=True)
    count, why = auto_workers(streams, cpu_count())
    return WorkerSplit(count, why, backend, None, streams)
