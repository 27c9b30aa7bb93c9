"""The keep-alive connection pool: opened before the timed phase, shared by all requests.

Every handshake (TCP, and TLS for ``https``) happens outside a request's clock: the pool opens
its connections before the load starts, and a request that finds no usable idle connection
opens a new one before its bytes go out (see :mod:`benchlib.measure.wire._connection` for where
the clock starts). :func:`check_tls` makes one connection before a run, so that a
certificate nobody trusts stops the run at once with what to do, instead of failing every
request.
"""

from __future__ import annotations

import asyncio
import ssl
import time

from benchlib._exceptions import UsageError
from benchlib._tls import tls_error_message
from benchlib.measure.wire._connection import Connection
from benchlib.measure.wire._endpoint import Address, Endpoint, resolve

__all__ = ["CLOSE_WINDOW_S", "CONNECT_CONCURRENCY", "MAX_IDLE_S", "SETTLE_S",
           "ConnectionPool", "check_tls"]

#: handshakes in flight at once while a pool opens
CONNECT_CONCURRENCY = 128
#: idle keep-alive connections older than this are replaced (uvicorn closes them at 5 s)
MAX_IDLE_S = 4.0
#: a server that closes a connection this soon after a whole, successful response closes
#: after every response (idle timeouts are seconds: uvicorn's is 5 s)
CLOSE_WINDOW_S = 0.1
#: how often the warmups' connections are looked at for such a close before the timed phase
SETTLE_S = 0.002


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
        #: one TLS context for all its connections (loading the CAs once)
        self._context = endpoint.tls_context() if endpoint.tls else None
        #: the server closes a connection after each response although its headers say
        #: keep-alive (llama-server: cpp-httplib ends a chunked stream by closing); learned
        #: from a whole, successful response's connection found closed, never assumed
        self.server_closes = False

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
            return await Connection.open(self.endpoint, self._connect_timeout, self._addrs,
                                         self._context)

    @property
    def kernel_clock(self) -> bool:
        return all(c.kernel_clock for c in self._idle) if self._idle else False

    async def acquire(self) -> Connection:
        """An idle connection the server still holds open, or a new one.

        A connection idle for :data:`MAX_IDLE_S` or more is replaced, not reused: servers
        close idle keep-alive connections (uvicorn, under vLLM and SGLang, after 5 s), and one
        that closes just as a request goes out fails that request "before responding". A
        server caught closing connections after whole responses (:attr:`server_closes`) gets
        a new connection per request from then on (one that already served a response is
        not reused, even if its close has not arrived yet). No request waits for any of this beyond
        a connect, and the connect happens before the request's clock starts.
        """
        now = time.perf_counter()
        while self._idle:
            conn = self._idle.pop()
            idle = now - conn.idle_since
            if conn.reusable and idle < MAX_IDLE_S and not (self.server_closes and conn.served):
                if not conn.hung_up():
                    return conn
                self._learn(conn, idle)
            conn.close()
        return await self._connect()

    async def renew(self, at: float) -> int:
        """Replace, all at once, the idle connections that will be :data:`MAX_IDLE_S` old at
        ``at`` (a ``perf_counter`` time): a load that waited before its start (a worker
        waiting for the others and for the warmups) then starts on fresh connections instead
        of paying a handshake per request in its first wave. Returns how many it replaced."""
        stale = [c for c in self._idle if at - c.idle_since >= MAX_IDLE_S]
        if not stale:
            return 0
        for conn in stale:
            self._idle.remove(conn)
            conn.close()
        conns = await asyncio.gather(*(self._connect() for _ in stale), return_exceptions=True)
        self._idle.extend(c for c in conns if isinstance(c, Connection))
        return len(stale)

    async def settle(self) -> None:
        """Watch the connections the warmups used until :data:`CLOSE_WINDOW_S` after the last
        of their responses, so a server that closes after every response is learned before
        the timed phase (the wait is outside every request's clock and the run's duration).

        Watched, not looked at once: on a busy 2-core machine a server's close may come tens
        of milliseconds after its last chunk, and a close missed here costs the first timed
        request sent on that connection. The watch ends at the first close; a server that
        keeps its connections open costs the whole window, once per run.
        """
        if self.server_closes or not any(c.served for c in self._idle):
            return
        deadline = max(c.idle_since for c in self._idle if c.served) + CLOSE_WINDOW_S
        looked = time.perf_counter()
        while not self.server_closes and looked < deadline:
            await asyncio.sleep(SETTLE_S)
            # the close came after the previous look: within the window if that look was
            for conn in [c for c in self._idle if c.served and c.hung_up()]:
                self._learn(conn, max(0.0, looked - conn.idle_since))
                self._idle.remove(conn)
                conn.close()
            looked = time.perf_counter()

    def _learn(self, conn: Connection, idle: float) -> None:
        """A connection found closed ``idle`` s after a whole, successful response: within
        :data:`CLOSE_WINDOW_S` that is the server closing after every response, not a fault
        and not an idle timeout."""
        if conn.last_ok and idle < CLOSE_WINDOW_S:
            self.server_closes = True

    def closed_before_response(self, conn: Connection) -> None:
        """A request's reused connection was closed before any response byte, right after a
        whole, successful response on it: the server closes after responses; reuse stops
        (the request itself stays failed, as it did on the wire)."""
        if conn.served > 1:
            self._learn(conn, time.perf_counter() - conn.idle_since)

    def release(self, conn: Connection) -> None:
        """Keep ``conn`` for the next request, unless it cannot carry one: its response was
        cut, the server closed it (checked now, after the request's clock stopped, or read
        with the answer's end) or the server is known to close after every response."""
        if conn.reusable and not self.server_closes:
            if not conn.hung_up():
                conn.idle_since = time.perf_counter()
                self._idle.append(conn)
                return
            self._learn(conn, 0.0)
        elif conn.closed_behind_answer:
            self._learn(conn, 0.0)
        conn.close()

    def close(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()


async def check_tls(endpoint: Endpoint, timeout: float) -> None:
    """For ``https``: open one connection and close it; a failed handshake raises
    :class:`~benchlib.UsageError` saying what to do (exit code 2, before any load).

    A server that cannot be reached raises nothing: the run's requests each name it.
    """
    if not endpoint.tls:
        return
    try:
        conn = await Connection.open(endpoint, timeout)
    except ssl.SSLCertVerificationError as exc:
        trusted = (f"the CAs in --ca-bundle {endpoint.ca_bundle}" if endpoint.ca_bundle
                   else "the system's CAs")
        raise UsageError("--base-url", (
            f"the TLS certificate of {endpoint.address} is not trusted by {trusted} "
            f"({exc.verify_message}). Pass --ca-bundle PEM with the certificate of the CA "
            "that signed it (a self-signed server: its own certificate), or --insecure to "
            "skip the check (still encrypted, but not authenticated)")) from None
    except ssl.SSLError as exc:
        raise UsageError("--base-url", f"TLS with {endpoint.address} failed: "
                                       f"{tls_error_message(exc)}") from None
    except OSError:
        return
    conn.close()
