"""The load generator: paced releases, a concurrency limit, warmups, timeouts.

Everything that costs time is done before the timed phase: request bodies are built, arrival
offsets drawn and the keep-alive connections opened (:mod:`benchlib.measure.wire._pool`). During
it, a request waits for its release time, then for a concurrency slot, then for an idle
connection; its clock starts only when its bytes go to the socket (see
:mod:`benchlib.measure.wire._connection`).

Every stream in flight holds a socket, so before the run the process's soft open-file limit
(``RLIMIT_NOFILE``, often 1024) is raised as far as the run can need, up to the hard limit
(:mod:`benchlib.measure.wire._limits`); where the hard limit is lower, the requests that cannot get
a socket fail with "Too many open files" and the limit named, and the run goes on.

A request never raises: every fault (refused, reset, closed, timed out, malformed) ends as a
:class:`~benchlib.measure.wire._request.RequestOutcome` with a named ``error``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import gc
import math
import os
import socket
import ssl
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from benchlib._tls import tls_error_message
from benchlib.measure.wire._connection import StreamCapture
from benchlib.measure.wire._decode import decode_capture
from benchlib.measure.wire._endpoint import Endpoint
from benchlib.measure.wire._limits import open_file_limit, raise_open_file_limit
from benchlib.measure.wire._pool import ConnectionPool
from benchlib.measure.wire._request import API_PATHS, EndpointKind, RequestOutcome
from benchlib.measure.workload._arrivals import arrival_offsets

__all__ = ["LoadPlan", "Schedule", "run_coroutine", "run_load"]

_T = TypeVar("_T")
_MAX_PREOPEN = 1024
#: outputs longer than this (characters) are post-processed off the event loop
OFFLOAD_CHARS = 1 << 18
_SWITCH_INTERVAL_S = 0.0005


@dataclass(frozen=True, slots=True)
class LoadPlan:
    """How to send: where (with which certificates trusted and which extra headers), how
    fast, how many at once. The key and the headers' values are secrets: never in the repr."""

    base_url: str
    kind: EndpointKind
    max_concurrency: int | None = None
    request_rate: float = math.inf
    burstiness: float = 1.0
    num_warmups: int = 0
    request_timeout: float = 600.0
    connect_timeout: float = 10.0
    seed: int = 0
    api_key: str | None = field(default=None, repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    ca_bundle: Path | None = None
    insecure: bool = False
    #: release times in s after the start (a trace's), instead of the rate's drawn ones
    offsets: tuple[float, ...] | None = None

    def release_offsets(self, n: int) -> list[float]:
        """When each of ``n`` requests is released: the given offsets, else drawn from the
        rate, burstiness and seed as ``vllm bench serve`` draws them."""
        if self.offsets is not None:
            return list(self.offsets[:n])
        return arrival_offsets(n, self.request_rate, self.burstiness, self.seed)

    def endpoint(self) -> Endpoint:
        return Endpoint.parse(self.base_url, ca_bundle=self.ca_bundle, insecure=self.insecure,
                              headers=self.headers)


@dataclass(frozen=True, slots=True)
class Schedule:
    """Which requests a load sends and when: a share of a run's requests (a worker's, see
    :mod:`benchlib.measure.load._workers`) at the times the whole run's schedule gives them.

    ``indices[k]`` is the run-wide index of the ``k``-th body (its outcome's ``index``),
    ``offsets[k]`` its release in seconds after the start. ``start`` is called once the
    connections are open and the warmups done, and returns the ``perf_counter_ns`` instant to
    start at (every worker of a host gets the same one: ``CLOCK_MONOTONIC`` is the host's).
    """

    indices: Sequence[int]
    offsets: Sequence[float]
    start: Callable[[], int]


def run_coroutine(coro: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run``, also from inside a running loop (a Jupyter kernel): then the load runs
    on a fresh loop in a worker thread, which also keeps the kernel's loop out of its way."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="benchlib-load") as pool:
        return pool.submit(asyncio.run, coro).result()


def _headers(endpoint: Endpoint, body: bytes, api_key: str | None) -> list[tuple[str, str]]:
    """A request's headers: benchlib's, then the endpoint's extra ones, which replace any of
    benchlib's with the same name (``Authorization`` over ``--api-key``, ``Host``,
    ``User-Agent`` …)."""
    headers = [("host", endpoint.host_header), ("content-type", "application/json"),
               ("accept", "text/event-stream"), ("user-agent", "benchlib"),
               ("content-length", str(len(body)))]
    if api_key:
        headers.append(("authorization", f"Bearer {api_key}"))
    if endpoint.headers:
        extra = {name.lower() for name, _ in endpoint.headers}
        headers = [h for h in headers if h[0] not in extra] + list(endpoint.headers)
    return headers


async def _one(pool: ConnectionPool, target: str, headers: list[tuple[str, str]], body: bytes,
               timeout: float) -> StreamCapture:
    capture = StreamCapture()
    try:
        conn = await pool.acquire()
    except OSError as exc:
        if isinstance(exc, ssl.SSLError):
            why = tls_error_message(exc)
        elif isinstance(exc, socket.gaierror):
            why = f"cannot resolve {pool.endpoint.host!r} ({exc.strerror or exc})"
        elif exc.errno and exc.errno > 0:
            # asyncio words a refused connect "Connect call failed (addr)": the OS's cause
            why = os.strerror(exc.errno)
        else:
            why = exc.strerror or str(exc)
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            why += (f" (the open-file limit is {open_file_limit()}; raise the hard limit, "
                    "e.g. ulimit -Hn, or lower --max-concurrency)")
        capture.error = f"cannot connect to {pool.endpoint.address}: {why}"
        capture.start_ns = capture.end_ns = time.perf_counter_ns()
        return capture
    try:
        await asyncio.wait_for(conn.stream("POST", target, headers, body, capture), timeout)
    except TimeoutError:
        capture.error = f"request timed out after {timeout:g} s"
    finally:
        if capture.error and capture.status is None and "before responding" in capture.error:
            pool.closed_before_response(conn)
        conn.last_ok = not capture.error and capture.status == 200
        pool.release(conn)
    if not capture.end_ns:
        capture.end_ns = time.perf_counter_ns()
    return capture


async def run_load(bodies: Sequence[bytes], prompt_lens: Sequence[int], plan: LoadPlan,
                   warmup_bodies: Sequence[bytes],
                   on_outcome: Callable[[RequestOutcome, StreamCapture], None],
                   on_warmed: Callable[[], None] | None = None,
                   schedule: Schedule | None = None) -> tuple[list[RequestOutcome], int]:
    """Send every body; call ``on_outcome`` as each request ends (in completion order).

    Ended requests are decoded and handed to ``on_outcome`` one per event-loop iteration, in
    the order they ended, so reading the sockets of the requests still streaming comes
    first. ``on_outcome`` runs on the event loop, except for outputs over
    :data:`OFFLOAD_CHARS` characters: those run in one worker thread, so re-tokenizing
    megabytes (the tokenizer releases the GIL) does not stall the other streams' reads. It
    must be thread-safe.

    Returns the outcomes in request order (each with its release time) and the duration as
    the reference takes it: from the start of the load, before the first arrival gap, to the
    end of the last request, in ns.

    Without a ``schedule`` every body is sent, at the offsets ``plan``'s rate, burstiness and
    seed give, from as soon as the warmups are done; with one, its share at its times.
    """
    endpoint = plan.endpoint()
    target = endpoint.path(API_PATHS[plan.kind])
    limit = plan.max_concurrency
    size = min(limit or len(bodies), _MAX_PREOPEN, max(1, len(bodies)))
    raise_open_file_limit(min(limit or len(bodies), len(bodies)))
    pool = ConnectionPool(endpoint, size, plan.connect_timeout)
    await pool.open()
    if schedule is None:
        indices: Sequence[int] = range(len(bodies))
        offsets: Sequence[float] = plan.release_offsets(len(bodies))
    else:
        indices, offsets = schedule.indices, schedule.offsets
    paced = any(offset > 0 for offset in offsets)  # a rate or a trace, not all at once
    headers = [_headers(endpoint, b, plan.api_key) for b in bodies]
    thresholds = gc.get_threshold()
    # A full collection walks every object (tokenizer, numpy, the captures): ~100 ms with
    # no socket read, by which time later chunks are merged under one kernel stamp. Freeze
    # what exists now and leave young cycles (asyncio's) to the cheap generations.
    gc.collect()
    gc.freeze()
    gc.set_threshold(thresholds[0], thresholds[1], 1 << 30)
    # While the worker thread post-processes a huge output, the loop thread gets the GIL
    # back within this interval (default 5 ms: longer than many ITLs).
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, _SWITCH_INTERVAL_S))
    try:
        if warmup_bodies:
            sem_w = asyncio.Semaphore(max(1, min(limit or len(warmup_bodies),
                                                 len(warmup_bodies))))

            async def warm(body: bytes) -> None:
                async with sem_w:
                    await _one(pool, target, _headers(endpoint, body, plan.api_key), body,
                               plan.request_timeout)

            await asyncio.gather(*(warm(b) for b in warmup_bodies))
            await pool.settle()
        if on_warmed is not None:  # e.g. a server-metrics baseline that leaves warmups out
            on_warmed()

        sem = asyncio.Semaphore(limit) if limit else None
        outcomes: list[RequestOutcome | None] = [None] * len(bodies)
        loop = asyncio.get_running_loop()
        ended: asyncio.Queue[tuple[int, StreamCapture]] = asyncio.Queue()
        failure: list[BaseException] = []
        worker = ThreadPoolExecutor(1, thread_name_prefix="benchlib-outcome")

        releases: list[int] = [0] * len(bodies)

        async def request(i: int) -> None:
            if sem is not None:
                async with sem:
                    capture = await _one(pool, target, headers[i], bodies[i],
                                         plan.request_timeout)
            else:
                capture = await _one(pool, target, headers[i], bodies[i], plan.request_timeout)
            ended.put_nowait((i, capture))

        async def post_process() -> None:
            # One ended request per loop iteration: a wave of requests ending together
            # would otherwise hold the loop for hundreds of ms while other streams' chunks
            # pile up unread in their sockets, where the kernel merges them under one stamp.
            while True:
                i, capture = await ended.get()
                try:
                    outcome = decode_capture(indices[i], prompt_lens[i], capture, plan.kind)
                    outcome.release_ns = releases[i]
                    outcome.due_ns = begin_ns + round(offsets[i] * 1e9)
                    outcome.paced = paced
                    outcomes[i] = outcome
                    if sum(map(len, outcome.chunk_texts)) > OFFLOAD_CHARS:
                        await loop.run_in_executor(worker, on_outcome, outcome, capture)
                    else:
                        on_outcome(outcome, capture)
                except Exception as exc:  # re-raised after the run; keep draining
                    failure.append(exc)
                finally:
                    ended.task_done()
                await asyncio.sleep(0)

        post = asyncio.create_task(post_process())
        begin = loop.time()
        begin_ns = time.perf_counter_ns()  # the reference's benchmark_start_time
        if schedule is not None:  # loop.time() and perf_counter_ns: both CLOCK_MONOTONIC
            begin_ns = schedule.start()
            # waiting for the others' warmups can outlast a server's idle timeout: what
            # would be stale within the first second is renewed in the start's lead
            await pool.renew(begin_ns / 1e9 + 1.0)
            begin = loop.time() + (begin_ns - time.perf_counter_ns()) / 1e9
        tasks = []
        for i, offset in enumerate(offsets):
            delay = begin + offset - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            releases[i] = time.perf_counter_ns()  # the reference's request_arrival_time
            tasks.append(asyncio.create_task(request(i)))
        try:
            await asyncio.gather(*tasks)
            end_ns = time.perf_counter_ns()
            await ended.join()
        finally:
            post.cancel()
            worker.shutdown(wait=True)
        if failure:
            raise failure[0]
    finally:
        pool.close()
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        sys.setswitchinterval(switch)
    return [o for o in outcomes if o is not None], end_ns - begin_ns
