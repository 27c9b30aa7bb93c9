"""Workers as Ray actors on a cluster's nodes (``--ray-address``): load from several hosts.

Ray (the optional extra ``benchlib[distributed]``, on every node) places one actor per worker,
dealt over the cluster's live nodes in turn and pinned there (node affinity, no CPU reserved:
a load generator waits on sockets). Each actor runs its share in a thread of its own, exactly
as a local worker process does (:func:`benchlib.measure.load._workers.run_job`), and keeps its
messages until the driver drains them (every 0.2 s).

Clocks: each request's times are taken on the host that sent it, so TTFT, TPOT, ITL and E2EL
need no synchronised clocks. Run-level times (the common start, the duration, throughput) do:
before the run the driver asks every actor for its monotonic and wall clocks eight times and
keeps the shortest round trip; the offset is the actor's reading minus the midpoint of the
driver's, uncertain by half that round trip. The start instant goes to each worker on its own
monotonic clock, and its outcomes' absolute times come back onto the driver's.

Output tokens from a tokenizer and per-chunk token counts are computed by the driver (a
tokenizer folder is a path on the driver's host, not on the nodes').
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NamedTuple

from benchlib._exceptions import MeasureError, UsageError
from benchlib.measure.load._split import WorkerSplit
from benchlib.measure.load._workers import Message, WorkerJob, run_job

__all__ = ["ClockSample", "RayWorkers", "clock_offset", "import_ray"]

#: round trips per actor for its clock offset
_CLOCK_SAMPLES = 8
#: the longest a driver waits for one call to an actor
_CALL_TIMEOUT_S = 60.0


class ClockSample(NamedTuple):
    """One round trip to an actor: the driver's monotonic and wall clocks before the call,
    the actor's two readings, the driver's two after it (ns)."""

    mono_before: int
    wall_before: int
    actor_mono: int
    actor_wall: int
    mono_after: int
    wall_after: int


def clock_offset(samples: Sequence[ClockSample]) -> tuple[int, int, int]:
    """From the round trip that took least (Cristian's method): the driver's monotonic clock
    minus the actor's, the actor's wall clock minus the driver's, and half that round trip,
    which bounds both errors whatever the split of the trip between its two legs (ns)."""
    best = min(samples, key=lambda s: s.mono_after - s.mono_before)
    mono_mid = (best.mono_before + best.mono_after) // 2
    wall_mid = (best.wall_before + best.wall_after) // 2
    return (mono_mid - best.actor_mono, best.actor_wall - wall_mid,
            (best.mono_after - best.mono_before) // 2)


def import_ray() -> ModuleType:
    """Ray, or a usage error saying how to get it."""
    try:
        import ray
    except ImportError:
        raise UsageError("--ray-address", "needs Ray, which is not installed: pip install "
                         "'benchlib[distributed]' (here and on every node of the "
                         "cluster)") from None
    return ray


def _check_reachable(address: str) -> None:
    """Refuse an address nothing answers at, at once: Ray itself retries such an address for
    minutes before it gives up."""
    if address == "auto" or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError("--ray-address", f"expected HOST:PORT of the cluster's head (or "
                         f"auto), got {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise UsageError("--ray-address", f"nothing answers at {address} "
                         f"({exc.strerror or exc}): start a cluster with `ray start --head` "
                         "on its head node and pass the address it prints") from None


class LoadActor:
    """A worker on a node (made a Ray actor by :meth:`RayWorkers.start`)."""

    def __init__(self) -> None:
        self._box: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._go: queue.SimpleQueue[int] = queue.SimpleQueue()

    def host(self) -> str:
        import ray

        return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"

    def clocks(self) -> tuple[int, int]:
        return time.perf_counter_ns(), time.time_ns()

    def run(self, job: WorkerJob) -> None:
        """Start the share in a thread; returns at once."""
        threading.Thread(target=self._main, args=(job,), name="benchlib-load",
                         daemon=True).start()

    def go(self, start_ns: int) -> None:
        self._go.put(start_ns)

    def drain(self) -> list[Message]:
        out: list[Message] = []
        while True:
            try:
                out.append(self._box.get_nowait())
            except queue.Empty:
                return out

    def _main(self, job: WorkerJob) -> None:
        def start() -> int:
            self._box.put(("ready",))
            return self._go.get()

        try:
            run_job(job, self._box.put, start, None)
        except BaseException as exc:  # every fault goes to the driver, named
            self._box.put(("error", "".join(traceback.format_exception_only(exc)).strip()))


class RayWorkers:
    """Actors on a Ray cluster, behind :class:`~benchlib.measure.load._workers.Workers`."""

    def __init__(self, ray: Any, actors: list[Any], owns_init: bool,
                 measure: bool = True) -> None:
        self._ray = ray
        self._actors = actors
        self._owns_init = owns_init
        self.hosts: list[str] = []
        self.mono_offsets: list[int] = []
        self.wall_offsets: list[int] = []
        self.uncertainties: list[int] = []
        if not measure:  # only to let go of what a failed start made
            return
        self.hosts = ray.get([a.host.remote() for a in actors], timeout=_CALL_TIMEOUT_S)
        for actor in actors:
            mono, wall, half_rtt = self._offset(actor)
            self.mono_offsets.append(mono)
            self.wall_offsets.append(wall)
            self.uncertainties.append(half_rtt)
        self._done: set[int] = set()

    @classmethod
    def start(cls, split: WorkerSplit, jobs: Callable[[int], Sequence[WorkerJob]]
              ) -> RayWorkers:
        """Connect to the cluster at ``split.ray_address``, place the actors (at least one
        per node when the count is the default, never more than the run has streams) and
        start each on its job. A node that cannot run them (no benchlib there, gone) stops
        it with :class:`~benchlib.MeasureError`, the actors and the connection let go."""
        ray = import_ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        assert split.ray_address is not None
        owns = not ray.is_initialized()
        if owns:
            _check_reachable(split.ray_address)
            try:
                ray.init(address=split.ray_address, log_to_driver=False,
                         logging_level="ERROR", configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UsageError("--ray-address", f"cannot join the Ray cluster at "
                                 f"{split.ray_address}: {exc} (start one with `ray start "
                                 "--head`, then pass its HOST:PORT)") from None
        else:  # a notebook that already joined a cluster: that one, said so
            print(f"Ray is already connected in this process: using its cluster, not "
                  f"{split.ray_address}", flush=True)
        actors: list[Any] = []
        try:
            nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
            count = split.count
            if split.per_node:
                count = min(max(count, len(nodes)), split.streams)
            remote = ray.remote(LoadActor)
            actors = [remote.options(
                num_cpus=0, name=None,
                scheduling_strategy=NodeAffinitySchedulingStrategy(nodes[k % len(nodes)],
                                                                   soft=False)).remote()
                for k in range(count)]
            workers = cls(ray, actors, owns)
            for actor, job in zip(actors, jobs(count), strict=True):
                actor.run.remote(job)
        except ray.exceptions.RayError as exc:
            cls(ray, actors, owns, measure=False).stop(True)
            raise MeasureError(f"the Ray workers could not start: {_first_line(exc)} (is "
                               "benchlib installed on every node?)") from None
        return workers

    def _offset(self, actor: Any) -> tuple[int, int, int]:
        samples = []
        for _ in range(_CLOCK_SAMPLES):
            t0, w0 = time.perf_counter_ns(), time.time_ns()
            mono, wall = self._ray.get(actor.clocks.remote(), timeout=_CALL_TIMEOUT_S)
            samples.append(ClockSample(t0, w0, mono, wall, time.perf_counter_ns(),
                                       time.time_ns()))
        return clock_offset(samples)

    def poll(self, timeout: float) -> list[tuple[int, Message]]:
        time.sleep(timeout)
        out: list[tuple[int, Message]] = []
        for k, ref in enumerate([a.drain.remote() for a in self._actors]):
            try:
                out.extend((k, msg) for msg in self._ray.get(ref, timeout=_CALL_TIMEOUT_S))
            except self._ray.exceptions.RayError as exc:  # the actor or its node is gone
                out.append((k, ("error", _first_line(exc))))
        return out

    def go(self, worker: int, start_ns: int) -> None:
        self._actors[worker].go.remote(start_ns)  # a caller's calls reach an actor in order

    def stop(self, fault: bool) -> None:
        """Kill the actors (their load stops with them) and leave a cluster we joined."""
        for actor in self._actors:
            with contextlib.suppress(Exception):  # already gone
                self._ray.kill(actor)
        if self._owns_init:
            self._ray.shutdown()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
