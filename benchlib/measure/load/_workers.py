"""One run's load from several client processes: started, run together, records merged.

One process reads only so many sockets promptly: past that, events queue in the kernel and
merge into one read, and their stamps become upper bounds (the ``timing`` self-check's
``client_bound``). ``--workers N`` runs the load in N processes, each with its own event loop
and connection pool, or, with ``--ray-address``, as Ray actors on a cluster's nodes
(:mod:`benchlib.measure.load._ray`); :mod:`benchlib.measure.load._split` deals the schedule.

The protocol, the same for both kinds of worker (:class:`Workers`): each worker opens its
connections (worker 0 also sends the warmups) and reports ``ready``; the driver then takes the
server-metrics baseline and gives every worker the same start instant (on its own host's
monotonic clock: the driver's minus the measured offset), and the workers stream back each
ended request's outcome, with its per-chunk token counts, as it ends. The driver writes every
record to the one ``.requests.jsonl`` as it arrives, so a worker that dies loses only its
requests in flight.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Protocol

from benchlib._exceptions import MeasureError
from benchlib.measure.load._loadgen import LoadPlan, Schedule, run_coroutine, run_load
from benchlib.measure.load._split import Shard
from benchlib.measure.load._tokens import Finish, finisher_at
from benchlib.measure.wire._connection import StreamCapture
from benchlib.measure.wire._request import RequestOutcome

__all__ = ["LocalWorkers", "Message", "WorkerJob", "Workers", "drive", "run_job", "shift"]

#: the lead the driver gives its workers between "start" and the first release
_LEAD_NS = 100_000_000

#: a worker's message: ("ready",), ("outcome", outcome, chunk_counts), ("done", duration_ns),
#: ("error", text)
Message = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class WorkerJob:
    """Everything a worker needs, picklable: its shard, how to send, the bodies to send."""

    shard: Shard
    plan: LoadPlan
    bodies: tuple[bytes, ...]
    prompt_lens: tuple[int, ...]
    warmup_body: bytes
    tokenizer: Path | None


def run_job(job: WorkerJob, send: Callable[[Message], None], start: Callable[[], int],
            make_finish: Callable[[Path | None], Finish] | None) -> None:
    """A worker's whole life: run its shard, ``send`` each outcome as it ends (with its
    per-chunk token counts, or ``None`` when ``make_finish`` is ``None``: the driver counts),
    then ``("done", duration_ns)``. ``start`` reports ready and returns the start instant."""
    finish = make_finish(job.tokenizer) if make_finish is not None else None
    plan = replace(job.plan, max_concurrency=job.shard.max_concurrency,
                   num_warmups=job.shard.num_warmups)

    def on_outcome(o: RequestOutcome, capture: StreamCapture) -> None:
        send(("outcome", o, finish(o) if finish is not None else None))

    schedule = Schedule(job.shard.indices, job.shard.offsets, start)
    _, duration = run_coroutine(run_load(job.bodies, job.prompt_lens, plan,
                                         [job.warmup_body] * plan.num_warmups, on_outcome,
                                         schedule=schedule))
    send(("done", duration))


def shift(o: RequestOutcome, delta_ns: int) -> RequestOutcome:
    """``o`` with its absolute times moved onto another clock (a host's monotonic clock onto
    the driver's); its durations are its own host's and do not change."""
    if delta_ns:
        o.start_ns += delta_ns
        o.end_ns += delta_ns if o.end_ns else 0
        if o.release_ns is not None:
            o.release_ns += delta_ns
        if o.due_ns is not None:
            o.due_ns += delta_ns
        o.chunk_times_ns = [t + delta_ns for t in o.chunk_times_ns]
    return o


class Workers(Protocol):
    """Started workers, local processes or Ray actors (:func:`drive` runs them)."""

    #: per worker: the host it runs on
    hosts: list[str]
    #: per worker: the driver's monotonic clock minus its own (ns): its times plus this are
    #: the driver's
    mono_offsets: list[int]
    #: per worker: its wall clock minus the driver's (ns), and half the round trip that
    #: measured it (ns)
    wall_offsets: list[int]
    uncertainties: list[int]

    def poll(self, timeout: float) -> list[tuple[int, Message]]:
        """Messages that arrived (waiting up to ``timeout`` s for the first)."""

    def go(self, worker: int, start_ns: int) -> None:
        """Start ``worker`` at ``start_ns`` on its own monotonic clock."""

    def stop(self, fault: bool) -> None:
        """End every worker: after the run, or at once on a fault (``fault``)."""


def _process_main(job: WorkerJob, conn: Connection) -> None:
    """A local worker process: messages over its pipe, the start instant back on it.

    Messages go out through a sender thread: a pickled outcome can be larger than the
    pipe's buffer, and a ``send`` that waits for the driver must not stall the event loop
    that reads the sockets (nor the offload thread, through a lock)."""
    box: queue.SimpleQueue[Message | None] = queue.SimpleQueue()

    def sender() -> None:
        try:
            while (msg := box.get()) is not None:
                conn.send(msg)
        except OSError:  # the driver went away: nothing left to tell
            pass

    thread = threading.Thread(target=sender, name="benchlib-sender", daemon=True)
    thread.start()

    def start() -> int:
        box.put(("ready",))
        value: int = conn.recv()
        return value

    try:
        run_job(job, box.put, start, finisher_at)
    except BaseException as exc:  # every fault goes to the driver, named
        box.put(("error", "".join(traceback.format_exception_only(exc)).strip()))
    finally:
        box.put(None)
        thread.join()
        conn.close()


class LocalWorkers:
    """Worker processes on this host (spawned: no state inherited from a Jupyter kernel);
    one clock, so every offset is 0."""

    def __init__(self, jobs: Sequence[WorkerJob]) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conns: list[Connection] = []
        self._procs = []
        for job in jobs:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_process_main, args=(job, child), daemon=True,
                               name=f"benchlib-worker-{job.shard.worker}")
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        n = len(jobs)
        self.hosts = [os.uname().nodename] * n
        self.mono_offsets = [0] * n
        self.wall_offsets = [0] * n
        self.uncertainties = [0] * n
        self._open = set(range(n))

    def poll(self, timeout: float) -> list[tuple[int, Message]]:
        ready = wait([self._conns[k] for k in self._open], timeout)
        out: list[tuple[int, Message]] = []
        for k in sorted(self._open):
            conn = self._conns[k]
            if conn not in ready:
                continue
            try:
                while conn.poll():
                    msg = conn.recv()
                    out.append((k, msg))
                    if msg[0] in ("done", "error"):
                        self._open.discard(k)  # its last word
                        break
            except (EOFError, OSError, pickle.UnpicklingError):  # died, mid-message too
                self._open.discard(k)
                self._procs[k].join(5)
                out.append((k, ("exit", self._procs[k].exitcode)))
        return out

    def go(self, worker: int, start_ns: int) -> None:
        with contextlib.suppress(OSError):  # it died after saying ready: poll says so
            self._conns[worker].send(start_ns)

    def stop(self, fault: bool) -> None:
        if fault:  # stop the others' load now: closed pipes, then SIGTERM, all at once
            for conn in self._conns:
                conn.close()
            for proc in self._procs:
                if proc.is_alive():
                    proc.terminate()
        deadline = time.monotonic() + (5 if fault else 30)
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        for conn in self._conns:
            conn.close()


def drive(workers: Workers, count: int, sink: Callable[[int, RequestOutcome, list[float]], None],
          finish: Finish, on_warmed: Callable[[], None] | None = None) -> int:
    """Run started ``workers`` to the end: wait until all are ready, start them together,
    hand every outcome (on the driver's clock, its token counts by ``finish`` where the
    worker left them to the driver) to ``sink``. Returns the run's duration in
    ns: from the common start to the last worker's last request.

    A worker's fault or death stops the run with :class:`~benchlib.MeasureError` naming
    it; what the others sent until then has been handed over.
    """
    ready: set[int] = set()
    done: dict[int, int] = {}
    fault = True

    def outcome(k: int, o: RequestOutcome, counts: list[float] | None) -> None:
        shift(o, workers.mono_offsets[k])
        sink(k, o, counts if counts is not None else finish(o))

    try:
        for k, msg in _messages(workers, count, lambda: len(ready) < count):
            if msg[0] == "ready":
                ready.add(k)
        if on_warmed is not None:
            on_warmed()
        # the start goes out on each worker's clock: it must arrive before it passes
        start = time.perf_counter_ns() + _LEAD_NS + 4 * max(workers.uncertainties)
        for k in range(count):
            workers.go(k, start - workers.mono_offsets[k])
        for k, msg in _messages(workers, count, lambda: len(done) < count):
            if msg[0] == "outcome":
                outcome(k, msg[1], msg[2])
            elif msg[0] == "done":
                done[k] = msg[1]
        fault = False
    finally:
        workers.stop(fault)
    return max(done.values())


def _messages(workers: Workers, count: int, more: Callable[[], bool]
              ) -> Iterator[tuple[int, Message]]:
    """Messages while ``more()``; a worker's error or exit raises."""
    while more():
        for k, msg in workers.poll(0.2):
            if msg[0] == "error":
                raise MeasureError(f"worker {k} of {count} ({workers.hosts[k]}) failed: "
                                   f"{msg[1]}")
            if msg[0] == "exit":
                raise MeasureError(f"worker {k} of {count} ({workers.hosts[k]}) ended "
                                   f"(exit code {msg[1]}) before its requests did; the records "
                                   "of the requests it finished are kept")
            yield k, msg
