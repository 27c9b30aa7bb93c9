"""A scripted OpenAI-compatible streaming server: a measuring instrument with known timings.

It answers ``/v1/completions`` and ``/v1/chat/completions`` (streamed or not), ``/v1/models``
and ``/health`` on raw sockets. Each request's arrival is the kernel's receive stamp of its
first bytes; each SSE event is written as its own chunk at ``arrival + ttft + k × itl`` and
the time its ``send`` returned is recorded (``content_writes_ns``; when it began is
``content_send_begin_ns``). On loopback the bytes reach the client's socket between the two
(usually microseconds apart; a server descheduled after the copy widens it), so the truth
file it writes (one JSON line per request, keyed by the response ``id``) is what a perfect
client would measure. Clients under test are compared with it, never with the configured
knobs. (While the client's receive buffer is full, e.g. behind
a multi-megabyte chunk it has not read yet, ``send`` returns once the bytes are in the
server's send buffer: the truth is early by that backlog.) A request's events are rendered
before its first one is due and framed by hand, so a due time costs one ``send``: the
server keeps its schedule at tens of thousands of chunks per second.

Faults (:class:`~benchlib.scripted.FaultRule`) hit selected generation requests: HTTP errors,
resets, closes, streams without ``[DONE]``, broken JSON, error events, stalls, JSON bodies
where a stream was asked for, and two shapes that must still succeed (a multi-megabyte chunk,
``choices: []`` events). A faulted request's truth row carries ``"fault": KIND`` and the
content writes that did happen, so a consumer of the truth file keeps the rows without
``fault`` (or those its client counted as successes) when it compares timings. Faults never
move the schedule of the other requests.

With a certificate and key (``tls``) it serves HTTPS the same way, TLS done in memory over
the raw sockets (:mod:`benchlib.scripted._peer`), so its truth stays the wire's. Headers it
requires (``required_headers``, a hosted API's key check) are answered 401 when missing; the
truth row lists the names of the headers a request carried, never their values, the request
body's top-level keys (``body_keys``: which sampling settings were sent) and a hash of its
prompt (``prompt_sha256``: which requests repeated a prompt), never the prompt itself.

The server raises its soft open-file limit (up to the hard limit) so that thousands of
concurrent connections can be accepted; a failed ``accept`` (out of descriptors) is retried,
never fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import ssl
import struct
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO, Any

import h11

from benchlib.scripted._bodies import choice_body, token_text, whole_body
from benchlib.scripted._config import FaultKind, ScriptConfig
from benchlib.scripted._peer import Hangup as _Hangup
from benchlib.scripted._peer import Peer as _Peer
from benchlib.scripted._prompts import PrefixCache, prompt_chars, prompt_digest

__all__ = ["SYNTHETIC_HEADER", "ScriptedServer"]

#: on every response: a measurement of this server is synthetic (canned timings, no engine),
#: and the client marks its result so (benchlib.measure: ``synthetic``)
SYNTHETIC_HEADER = ("x-benchlib-synthetic", "scripted-server")

#: faults that strike halfway through the content chunks
_MID_STREAM: frozenset[str] = frozenset(
    {"reset", "close-mid-stream", "bad-json", "error-event", "stall"})
_HTTP_FAULTS: dict[str, tuple[int, str, str]] = {
    "http-500": (500, "InternalServerError", "scripted fault: internal server error"),
    "http-429": (429, "RateLimitError", "scripted fault: too many requests"),
}
#: accept() failures that a busy server outlives (descriptors run out, a client gave up)
_ACCEPT_RETRY_S = 0.05
#: a TLS handshake that takes longer is abandoned
_HANDSHAKE_S = 10.0


class ScriptedServer:
    """Serve scripted streams on ``host:port``; write the truth to ``truth`` if given; serve
    HTTPS with the ``tls`` server context if given."""

    def __init__(self, config: ScriptConfig, truth: Path | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.config = config
        self._tls = tls
        self._truth_path = truth
        self._truth: IO[str] | None = None
        self._count = 0
        self._cache = PrefixCache() if config.prefix_cache else None
        self._slots = asyncio.Semaphore(config.max_streams) if config.max_streams else None

    async def serve(self, host: str, port: int, on_ready: Callable[[int], None]) -> None:
        """Listen, call ``on_ready(port)``, and serve until cancelled."""
        from benchlib.measure import raise_open_file_limit  # (imports numpy: lazily)

        loop = asyncio.get_running_loop()
        raise_open_file_limit(1 << 16)
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind((host, port))
        lsock.listen(4096)
        lsock.setblocking(False)
        if self._truth_path is not None:
            self._truth = self._truth_path.open("a", encoding="utf-8")
        on_ready(lsock.getsockname()[1])
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                try:
                    sock, _ = await loop.sock_accept(lsock)
                except OSError:  # EMFILE, ENFILE, ECONNABORTED: keep serving the others
                    await asyncio.sleep(_ACCEPT_RETRY_S)
                    continue
                sock.setblocking(False)
                task = loop.create_task(self._connection(_Peer(sock, self._tls)))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:
            lsock.close()
            for task in tasks:
                task.cancel()
            if self._truth is not None:
                self._truth.close()

    async def _connection(self, peer: _Peer) -> None:
        orderly = True
        try:
            await peer.handshake(_HANDSHAKE_S)
            while True:
                request, body, arrival = await self._read_request(peer)
                if request is None:
                    return
                await self._respond(peer, request, body, arrival)
                if peer.h11.our_state is h11.MUST_CLOSE:
                    return
                if self.config.close_after_stream_ms is not None and request.method == b"POST":
                    await asyncio.sleep(self.config.close_after_stream_ms / 1000)
                    return
                peer.h11.start_next_cycle()
        except _Hangup as hangup:
            orderly = False  # a fault cuts the connection: no close_notify
            if hangup.reset:  # linger on, timeout 0: close() sends RST, not FIN
                with contextlib.suppress(OSError):
                    peer.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                         struct.pack("ii", 1, 0))
            return
        except (OSError, h11.ProtocolError):  # ssl.SSLError too: a refused certificate
            orderly = False
            return
        finally:
            peer.close(notify=orderly)

    async def _read_request(self, peer: _Peer) -> tuple[h11.Request | None, bytes, int]:
        request: h11.Request | None = None
        body = bytearray()
        arrival = 0
        idle = self.config.idle_timeout_s
        while True:
            event = peer.h11.next_event()
            if event is h11.NEED_DATA:
                if not arrival and idle is not None:
                    try:  # keep-alive between requests, as uvicorn's timeout_keep_alive
                        data, stamp = await asyncio.wait_for(peer.recv(), idle)
                    except TimeoutError:
                        return None, b"", 0
                else:
                    data, stamp = await peer.recv()
                if not arrival:
                    arrival = stamp
                peer.h11.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return request, bytes(body), arrival
            elif isinstance(event, h11.ConnectionClosed):
                return None, b"", 0

    async def _respond(self, peer: _Peer, req: h11.Request, body: bytes, arrival: int) -> None:
        target = req.target.decode("latin-1").split("?")[0]
        if req.method == b"GET" and target in ("/health", "/v1/health"):
            await self._json(peer, 200, {"status": "ok"})
        elif not self.config.authorized(req.headers):
            await self._json(peer, 401, {"error": {
                "message": "scripted: a required header is missing or wrong",
                "type": "AuthenticationError", "param": None, "code": 401}})
        elif req.method == b"GET" and target == "/v1/models":
            await self._json(peer, 200, {"object": "list", "data": [
                {"id": self.config.model, "object": "model", "owned_by": "benchlib"}]})
        elif req.method == b"POST" and target in ("/v1/completions", "/v1/chat/completions"):
            try:
                payload = json.loads(body)
            except ValueError:
                await self._json(peer, 400, {"error": {"message": "body is not JSON"}})
                return
            if not isinstance(payload, dict):
                await self._json(peer, 400, {"error": {"message": "body is not a JSON object"}})
                return
            async with self._slot() as start_ns:  # max_streams: wait for a free slot
                await self._generate(peer, payload, target.endswith("chat/completions"),
                                     arrival, [name.decode("latin-1") for name, _ in req.headers],
                                     start_ns)
        else:
            await self._json(peer, 404, {"error": {"message": f"no route {target}"}})

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[int]:
        """One of ``max_streams`` generation slots, held for the whole response; yields the
        perf_counter_ns it was had (0: no limit)."""
        if self._slots is None:
            yield 0
            return
        async with self._slots:
            yield time.perf_counter_ns()

    async def _json(self, peer: _Peer, status: int, obj: dict[str, Any],
                    headers: tuple[tuple[str, str], ...] = ()) -> None:
        data = json.dumps(obj).encode()
        await peer.write(h11.Response(status_code=status, headers=[
            ("content-type", "application/json"), ("content-length", str(len(data))),
            SYNTHETIC_HEADER, *headers]))
        await peer.write(h11.Data(data=data))
        await peer.write(h11.EndOfMessage())

    async def _generate(self, peer: _Peer, payload: dict[str, Any], chat: bool,
                        arrival: int, header_names: list[str], start_ns: int = 0) -> None:
        cfg = self.config
        limit = cfg.crash_above_prompt_chars
        if limit is not None and prompt_chars(payload) > limit:
            print(f"scripted crash: a prompt of {prompt_chars(payload)} characters "
                  f"(limit {limit})", file=sys.stderr, flush=True)
            os._exit(3)  # like an engine taken down by the GPU: no reply, sockets reset
        self._count += 1
        count = self._count  # this request's: others may arrive while it streams
        fault = cfg.fault_for(count)
        rid = f"{'chatcmpl' if chat else 'cmpl'}-{self._count}"
        n = cfg.output_tokens or int(payload.get("max_tokens") or payload.get(
            "max_completion_tokens") or cfg.default_max_tokens)
        k = cfg.tokens_per_chunk
        writes: list[int] = []
        begins: list[int] = []
        row: dict[str, Any] = {"id": rid, "arrival_ns": arrival, "content_writes_ns": writes,
                               "content_send_begin_ns": begins,
                               "completion_tokens": n, "tokens_per_chunk": k,
                               "kernel_clock": peer.kernel_clock, "headers": header_names,
                               "prompt_sha256": prompt_digest(payload),
                               "body_keys": sorted(payload)}
        if fault is not None:
            row["fault"] = fault
        if fault in _HTTP_FAULTS:
            status, kind, message = _HTTP_FAULTS[fault]
            self._record(row)
            await self._json(peer, status, {"error": {"message": message, "type": kind,
                                                      "param": None, "code": status}},
                             (("retry-after", "1"),) if status == 429 else ())
            return
        if fault == "close-no-response":
            self._record(row)
            raise _Hangup(reset=False)
        texts = [token_text(i) for i in range(n)]
        if not payload.get("stream") or fault == "json-body":
            if fault is not None:
                self._record(row)
            await self._json(peer, 200, whole_body(self.config, rid, chat, texts))
            return
        await peer.write(h11.Response(status_code=200, headers=[
            ("content-type", "text/event-stream"), ("cache-control", "no-cache"),
            SYNTHETIC_HEADER]))
        base = {"id": rid, "object": "chat.completion.chunk" if chat else "text_completion",
                "created": int(time.time()), "model": cfg.model}
        if chat and cfg.role_chunk:
            role = {**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                "content": ""}}]}
            row["role_write_ns"] = await self._event(peer, role)
        t0 = max(arrival, start_ns) / 1e9  # a request that waited for a slot starts late
        if cfg.max_streams is not None:
            row["slot_ns"] = start_ns
        chunks = [(i, min(i + k, n)) for i in range(0, n, k)]
        cut = max(1, len(chunks) // 2)  # content chunks sent before a mid-stream fault
        # rendered before the first is due, so each due time costs only a send
        events = [json.dumps({**base, "choices": [choice_body(self.config,
            texts, a, b, chat, huge=fault == "huge-chunk" and j == cut - 1)]}).encode()
            for j, (a, b) in enumerate(chunks)]
        empty = json.dumps({**base, "choices": []}).encode()
        schedule = cfg.schedule_ms(count, len(events))  # ttft, then the gaps (jittered)
        for j, event in enumerate(events):
            if j == cut and fault in _MID_STREAM and await self._mid_stream(peer, fault, row):
                return
            due = t0 + schedule[j] / 1e3
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if fault == "empty-choices":
                await peer.event(empty)
            writes.append(await peer.event(event))
            begins.append(peer.last_send_begin_ns)
        if fault in _MID_STREAM and cut == len(chunks) and await self._mid_stream(
                peer, fault, row):
            return
        options = payload.get("stream_options") or {}
        # when the kernel had each write after the last content (usage, [DONE], the end): a
        # client that reads the last content late may read it with the next, under its stamp
        tail: list[int] = row.setdefault("tail_writes_ns", [])
        if cfg.usage and isinstance(options, dict) and options.get("include_usage"):
            prompt_tokens = prompt_chars(payload) // 4 + 1  # never the dataset's count
            cache = {} if self._cache is None else {"timings": self._cache.timings(payload)}
            tail.append(await self._event(peer, {**base, "choices": [], "usage": {
                "prompt_tokens": prompt_tokens, "completion_tokens": n,
                "total_tokens": prompt_tokens + n}, **cache}))
        if fault != "no-done":
            tail.append(await peer.event(b"[DONE]"))
        tail.append(await peer.write(h11.EndOfMessage()))
        self._record(row)

    async def _mid_stream(self, peer: _Peer, fault: FaultKind, row: dict[str, Any]) -> bool:
        """Inject a mid-stream fault; ``True`` when the response is over (or abandoned)."""
        if fault == "bad-json":  # a chunk cut short, as a broken proxy would pass it on
            await peer.event(b'{"id": "' + row["id"].encode()
                             + b'", "choices": [{"index": 0, "text": " tru')
            return False
        self._record(row)
        if fault == "error-event":  # what vLLM sends when generation fails mid-stream
            await self._event(peer, {"error": {"message": "scripted fault: generation failed",
                                               "type": "InternalServerError", "param": None,
                                               "code": 500}})
            await peer.event(b"[DONE]")
            await peer.write(h11.EndOfMessage())
            return True
        if fault == "stall":  # never finish; leave when the client gives up and hangs up
            while (await peer.recv())[0]:
                pass
        raise _Hangup(reset=fault == "reset")

    async def _event(self, peer: _Peer, obj: dict[str, Any]) -> int:
        return await peer.event(json.dumps(obj).encode())

    def _record(self, row: dict[str, Any]) -> None:
        if self._truth is not None:
            self._truth.write(json.dumps(row) + "\n")
            self._truth.flush()
