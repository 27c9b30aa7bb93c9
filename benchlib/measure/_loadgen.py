"""The load generator: paced releases, a concurrency limit, warmups, timeouts.

Everything that costs time is done before the timed phase: request bodies are built, arrival
offsets drawn and the keep-alive connections opened. During it, a request waits for its
release time, then for a concurrency slot, then for an idle connection; its clock starts only
when its bytes go to the socket (see :mod:`benchlib.measure._connection`).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchlib.measure._arrivals import arrival_offsets
from benchlib.measure._connection import ConnectionPool, Endpoint, StreamCapture
from benchlib.measure._request import API_PATHS, EndpointKind, RequestOutcome, decode_capture

__all__ = ["LoadPlan", "run_load"]

_MAX_PREOPEN = 1024


@dataclass(frozen=True, slots=True)
class LoadPlan:
    """How to send: where, how fast, how many at once."""

    base_url: str
    kind: EndpointKind
    max_concurrency: int | None = None
    request_rate: float = math.inf
    burstiness: float = 1.0
    num_warmups: int = 0
    request_timeout: float = 600.0
    connect_timeout: float = 10.0
    seed: int = 0
    api_key: str | None = None


def _headers(endpoint: Endpoint, body: bytes, api_key: str | None) -> list[tuple[str, str]]:
    headers = [("host", endpoint.host_header), ("content-type", "application/json"),
               ("accept", "text/event-stream"), ("user-agent", "benchlib"),
               ("content-length", str(len(body)))]
    if api_key:
        headers.append(("authorization", f"Bearer {api_key}"))
    return headers


async def _one(pool: ConnectionPool, target: str, headers: list[tuple[str, str]], body: bytes,
               timeout: float) -> StreamCapture:
    capture = StreamCapture()
    try:
        conn = await pool.acquire()
    except OSError as exc:
        capture.error = f"cannot connect to {pool.endpoint.host_header}: {exc.strerror or exc}"
        capture.start_ns = capture.end_ns = time.perf_counter_ns()
        return capture
    try:
        await asyncio.wait_for(conn.stream("POST", target, headers, body, capture), timeout)
    except TimeoutError:
        capture.error = f"request timed out after {timeout:g} s"
    finally:
        pool.release(conn)
    if not capture.end_ns:
        capture.end_ns = time.perf_counter_ns()
    return capture


async def run_load(bodies: Sequence[bytes], prompt_lens: Sequence[int], plan: LoadPlan,
                   warmup_bodies: Sequence[bytes],
                   on_outcome: Callable[[RequestOutcome, StreamCapture], None]
                   ) -> tuple[list[RequestOutcome], int]:
    """Send every body; call ``on_outcome`` as each request ends (in completion order).

    Returns the outcomes in request order and the duration (first send → last end) in ns.
    """
    endpoint = Endpoint.parse(plan.base_url)
    target = endpoint.path(API_PATHS[plan.kind])
    limit = plan.max_concurrency
    size = min(limit or len(bodies), _MAX_PREOPEN, max(1, len(bodies)))
    pool = ConnectionPool(endpoint, size, plan.connect_timeout)
    await pool.open()
    offsets = arrival_offsets(len(bodies), plan.request_rate, plan.burstiness, plan.seed)
    headers = [_headers(endpoint, b, plan.api_key) for b in bodies]
    try:
        if warmup_bodies:
            sem_w = asyncio.Semaphore(max(1, min(limit or len(warmup_bodies),
                                                 len(warmup_bodies))))

            async def warm(body: bytes) -> None:
                async with sem_w:
                    await _one(pool, target, _headers(endpoint, body, plan.api_key), body,
                               plan.request_timeout)

            await asyncio.gather(*(warm(b) for b in warmup_bodies))

        sem = asyncio.Semaphore(limit) if limit else None
        outcomes: list[RequestOutcome | None] = [None] * len(bodies)

        async def request(i: int) -> None:
            if sem is not None:
                async with sem:
                    capture = await _one(pool, target, headers[i], bodies[i],
                                         plan.request_timeout)
            else:
                capture = await _one(pool, target, headers[i], bodies[i], plan.request_timeout)
            outcome = decode_capture(i, prompt_lens[i], capture, plan.kind)
            outcomes[i] = outcome
            on_outcome(outcome, capture)

        loop = asyncio.get_running_loop()
        begin = loop.time()
        tasks = []
        for i, offset in enumerate(offsets):
            delay = begin + offset - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(request(i)))
        await asyncio.gather(*tasks)
    finally:
        pool.close()
    done = [o for o in outcomes if o is not None]
    start = min(o.start_ns for o in done)
    end = max(o.end_ns for o in done)
    return done, end - start
