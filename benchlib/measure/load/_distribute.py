"""The load sent from several workers: local processes or Ray actors, chosen by the split.

:func:`load_in_workers` is what :func:`~benchlib.measure.measure` calls when a run has more
than one worker or a Ray cluster: it deals the schedule (:mod:`benchlib.measure.load._split`),
starts the workers (:mod:`benchlib.measure.load._workers`,
:mod:`benchlib.measure.load._ray`), drives
them to the end and writes the result's ``workers`` block, each worker's own timing
self-check in it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from benchlib.measure.load._loadgen import LoadPlan
from benchlib.measure.load._split import (
    LATE_START_MS,
    Shard,
    WorkerReport,
    WorkersInfo,
    WorkerSplit,
    partition,
)
from benchlib.measure.load._tokens import Finish
from benchlib.measure.load._workers import LocalWorkers, WorkerJob, Workers, drive
from benchlib.measure.stats._metrics import timing_of
from benchlib.measure.wire._request import RequestOutcome

__all__ = ["Sink", "load_in_workers"]

#: where each ended request goes, with the worker that sent it and its per-chunk token counts
Sink = Callable[[int, RequestOutcome, list[float]], None]


def load_in_workers(split: WorkerSplit, plan: LoadPlan, bodies: Sequence[bytes],
                    prompt_lens: Sequence[int], tokenizer: Path | None, sink: Sink,
                    finish: Finish, on_warmed: Callable[[], None] | None = None
                    ) -> tuple[list[RequestOutcome], int, WorkersInfo]:
    """Send ``bodies`` as ``plan`` says from the workers ``split`` names; every outcome goes
    to ``sink`` as it arrives. Local workers count tokens with the ``tokenizer`` folder
    themselves; over Ray the driver does, with ``finish``. Returns the outcomes in request
    order, the run's duration (ns) and the result's ``workers`` block."""
    offsets = plan.release_offsets(len(bodies))

    def jobs(count: int) -> list[WorkerJob]:
        tok = tokenizer if split.backend == "processes" else None
        return [WorkerJob(shard, plan, tuple(bodies[i] for i in shard.indices),
                          tuple(prompt_lens[i] for i in shard.indices), bodies[0], tok)
                for shard in partition(offsets, plan.max_concurrency, plan.num_warmups, count)]

    workers: Workers
    if split.backend == "ray":
        from benchlib.measure.load._ray import RayWorkers

        assert split.ray_address is not None
        workers = RayWorkers.start(split, jobs)
    else:
        workers = LocalWorkers(jobs(split.count))
    count = len(workers.hosts)
    got: list[RequestOutcome] = []
    worker_of: dict[int, int] = {}

    def keep(worker: int, o: RequestOutcome, chunk_counts: list[float]) -> None:
        got.append(o)
        worker_of[o.index] = worker
        sink(worker, o, chunk_counts)

    duration = drive(workers, count, keep, finish, on_warmed)
    outcomes = sorted(got, key=lambda o: o.index)
    shards = partition(offsets, plan.max_concurrency, plan.num_warmups, count)
    return outcomes, duration, _info(split, workers, shards, outcomes, worker_of)


def _info(split: WorkerSplit, workers: Workers, shards: Sequence[Shard],
          outcomes: Sequence[RequestOutcome], worker_of: dict[int, int]) -> WorkersInfo:
    reports = []
    for shard in shards:
        k = shard.worker
        mine = [o for o in outcomes if worker_of[o.index] == k]
        first = next((o for o in mine if o.index == shard.indices[0]), None)
        lag = first.release_lag_ns if first is not None else None
        reports.append(WorkerReport(
            worker=k, host=workers.hosts[k], requests=len(shard.indices),
            max_concurrency=shard.max_concurrency,
            clock_offset_ms=workers.wall_offsets[k] / 1e6,
            clock_offset_uncertainty_ms=workers.uncertainties[k] / 1e6,
            start_lag_ms=lag / 1e6 if lag is not None else None, timing=timing_of(mine)))
    return WorkersInfo(count=len(shards), backend=split.backend, chosen=split.chosen,
                       hosts=len({h.split("/")[0] for h in workers.hosts}),
                       nodes=len(set(workers.hosts)),
                       client_bound_workers=[r.worker for r in reports
                                             if r.timing.client_bound],
                       late_start_workers=[r.worker for r in reports
                                           if (r.start_lag_ms or 0) > LATE_START_MS],
                       late_start_limit_ms=LATE_START_MS, workers=reports)
