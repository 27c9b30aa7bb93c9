"""The keep-alive connection pool: opened before the timed phase, shared by all requests.

Every handshake happens outside a request's clock: the pool opens its connections before the
load starts, and a request that finds no usable idle connection opens a new one before its
bytes go out (see :mod:`benchlib.measure._connection` for where the clock starts).
"""

from __future__ import annotations

import asyncio
import time

from benchlib.measure._connection import Connection
from benchlib.measure._endpoint import Address, Endpoint, resolve

__all__ = ["CONNECT_CONCURRENCY", "MAX_IDLE_S", "ConnectionPool"]

#: handshakes in flight at once while a pool opens
CONNECT_CONCURRENCY = 128
#: idle keep-alive connections older than this are replaced (uvicorn closes them at 5 s)
MAX_IDLE_S = 4.0


class ConnectionPool:
    """Keep-alive connections shared by all requests, opened before the timed phase.

    Opening is bounded (:data:`CONNECT_CONCURRENCY` handshakes in flight), so a thousand
    connections opened at once do not overflow the server's SYN or accept backlog (a
    dropped SYN costs a one-second retransmit, or a connect timeout).
    """

    def __init__(self, endpoint: Endpoint, size: int, connect_timeout: float) -> None:
        self.endpoint = endpoint
        self.size = size
        self._connect_timeout = connect_timeout
        self._idle: list[Connection] = []
        self._addrs: list[Address] | None = None
        self._connecting: asyncio.Semaphore | None = None

    async def open(self) -> None:
        """Open ``size`` connections now, so no request pays for a handshake.

        Failures are not raised here: a request that finds no connection opens its own and
        records why that failed, so an unreachable server shows up per request.
        """
        try:
            self._addrs = await resolve(self.endpoint)
        except OSError:
            return  # each request will try again and name the error
        conns = await asyncio.gather(*(self._connect() for _ in range(self.size)),
                                     return_exceptions=True)
        self._idle.extend(c for c in conns if isinstance(c, Connection))

    async def _connect(self) -> Connection:
        if self._connecting is None:
            self._connecting = asyncio.Semaphore(CONNECT_CONCURRENCY)
        async with self._connecting:
            return await Connection.open(self.endpoint, self._connect_timeout, self._addrs)

    @property
    def kernel_clock(self) -> bool:
        return all(c.kernel_clock for c in self._idle) if self._idle else False

    async def acquire(self) -> Connection:
        """An idle connection the server still holds open, or a new one.

        A connection idle for :data:`MAX_IDLE_S` or more is replaced, not reused: servers
        close idle keep-alive connections (uvicorn, under vLLM and SGLang, after 5 s), and one
        that closes just as a request goes out fails that request "before responding". The
        new connect happens before the request's clock starts.
        """
        now = time.perf_counter()
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable and now - conn.idle_since < MAX_IDLE_S and not conn.hung_up():
                return conn
            conn.close()
        return await self._connect()

    def release(self, conn: Connection) -> None:
        if conn.reusable:
            conn.idle_since = time.perf_counter()
            self._idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()
