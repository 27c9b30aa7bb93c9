"""The connection pool against a loopback listener: 1,024 connections opened at once."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from benchlib.measure import Endpoint, raise_open_file_limit
from benchlib.measure._pool import ConnectionPool


def test_1024_connections_open_at_once_through_a_tiny_backlog() -> None:
    # both ends live in this process: 2,048 sockets
    limit = raise_open_file_limit(2 * 1024 + 64)
    if limit is not None and limit < 2 * 1024 + 64:
        pytest.skip(f"open-file limit {limit} too low")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # a tiny backlog (and a GIL-bound accept): SYNs get dropped
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    port = listener.getsockname()[1]

    async def open_pool() -> tuple[int, float]:
        pool = ConnectionPool(Endpoint.parse(f"http://127.0.0.1:{port}"), 1024, 10.0)
        t0 = time.perf_counter()
        await pool.open()
        took = time.perf_counter() - t0
        n = len(pool._idle)
        pool.close()
        return n, took

    try:
        opened, took = asyncio.run(open_pool())
    finally:
        listener.close()
        for s in accepted:
            s.close()
    assert opened == 1024
    # a dropped SYN is retried after 1 s, 3 s, …: bounded connects keep it to a few retries
    assert took < 5.0, took


def test_a_refused_pool_opens_nothing_and_raises_nothing() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def go() -> int:
        pool = ConnectionPool(Endpoint.parse(f"http://127.0.0.1:{port}"), 8, 1.0)
        await pool.open()
        with pytest.raises(ConnectionRefusedError):
            await pool.acquire()
        return len(pool._idle)

    assert asyncio.run(go()) == 0
