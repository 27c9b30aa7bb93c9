"""A scripted OpenAI-compatible streaming server: a measuring instrument with known timings.

It answers ``/v1/completions`` and ``/v1/chat/completions`` (streamed or not), ``/v1/models``
and ``/health`` on raw sockets. Each request's arrival is the kernel's receive stamp of its
first bytes; each SSE event is written as its own chunk at ``arrival + ttft + k × itl`` and
the time its ``send`` returned is recorded. On loopback that is the moment the bytes reached
the client's socket, so the truth file it writes (one JSON line per request, keyed by the
response ``id``) is what a perfect client would measure. Clients under test are compared with
it, never with the configured knobs.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import h11

from benchlib._wire import ANC_BUFSIZE, ClockMap, enable_rx_timestamps, rx_timestamp_ns
from benchlib.scripted._config import ScriptConfig

__all__ = ["ScriptedServer"]

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _token_text(i: int) -> str:
    return " " + _WORDS[i % len(_WORDS)]


class _Peer:
    """One accepted connection: stamped reads and whole-chunk writes."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.loop = asyncio.get_running_loop()
        self.kernel_clock = enable_rx_timestamps(sock)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=1 << 24)

    async def recv(self) -> tuple[bytes, int]:
        """Next bytes from the client and the perf_counter_ns time they arrived."""
        while True:
            clock = ClockMap.now()
            try:
                data, anc, _, _ = self.sock.recvmsg(1 << 16, ANC_BUFSIZE)
            except (BlockingIOError, InterruptedError):
                fut: asyncio.Future[None] = self.loop.create_future()
                self.loop.add_reader(self.sock.fileno(), _wake, fut)
                try:
                    await fut
                finally:
                    self.loop.remove_reader(self.sock.fileno())
                continue
            stamp = rx_timestamp_ns(anc) if self.kernel_clock else None
            return data, clock.to_perf_ns(stamp) if stamp is not None else time.perf_counter_ns()

    async def write(self, event: h11.Data | h11.Response | h11.EndOfMessage) -> int:
        """Write one h11 event; return perf_counter_ns when the kernel had all of it."""
        data = self.h11.send(event) or b""
        try:
            sent = self.sock.send(data)
        except BlockingIOError:
            sent = 0
        if sent < len(data):
            await self.loop.sock_sendall(self.sock, memoryview(data)[sent:])
        return time.perf_counter_ns()


class ScriptedServer:
    """Serve scripted streams on ``host:port``; write the truth to ``truth`` if given."""

    def __init__(self, config: ScriptConfig, truth: Path | None = None) -> None:
        self.config = config
        self._truth_path = truth
        self._truth: IO[str] | None = None
        self._count = 0

    async def serve(self, host: str, port: int, on_ready: Callable[[int], None]) -> None:
        """Listen, call ``on_ready(port)``, and serve until cancelled."""
        loop = asyncio.get_running_loop()
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
                sock, _ = await loop.sock_accept(lsock)
                sock.setblocking(False)
                task = loop.create_task(self._connection(_Peer(sock)))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:
            lsock.close()
            for task in tasks:
                task.cancel()
            if self._truth is not None:
                self._truth.close()

    async def _connection(self, peer: _Peer) -> None:
        try:
            while True:
                request, body, arrival = await self._read_request(peer)
                if request is None:
                    return
                await self._respond(peer, request, body, arrival)
                if peer.h11.our_state is h11.MUST_CLOSE:
                    return
                peer.h11.start_next_cycle()
        except (OSError, h11.ProtocolError):
            return
        finally:
            peer.sock.close()

    async def _read_request(self, peer: _Peer) -> tuple[h11.Request | None, bytes, int]:
        request: h11.Request | None = None
        body = bytearray()
        arrival = 0
        while True:
            event = peer.h11.next_event()
            if event is h11.NEED_DATA:
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
        elif req.method == b"GET" and target == "/v1/models":
            await self._json(peer, 200, {"object": "list", "data": [
                {"id": self.config.model, "object": "model", "owned_by": "benchlib"}]})
        elif req.method == b"POST" and target in ("/v1/completions", "/v1/chat/completions"):
            try:
                payload = json.loads(body)
            except ValueError:
                await self._json(peer, 400, {"error": {"message": "body is not JSON"}})
                return
            await self._generate(peer, payload, target.endswith("chat/completions"), arrival)
        else:
            await self._json(peer, 404, {"error": {"message": f"no route {target}"}})

    async def _json(self, peer: _Peer, status: int, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        await peer.write(h11.Response(status_code=status, headers=[
            ("content-type", "application/json"), ("content-length", str(len(data)))]))
        await peer.write(h11.Data(data=data))
        await peer.write(h11.EndOfMessage())

    async def _generate(self, peer: _Peer, payload: dict[str, Any], chat: bool,
                        arrival: int) -> None:
        cfg = self.config
        self._count += 1
        rid = f"{'chatcmpl' if chat else 'cmpl'}-{self._count}"
        n = cfg.output_tokens or int(payload.get("max_tokens") or payload.get(
            "max_completion_tokens") or cfg.default_max_tokens)
        texts = [_token_text(i) for i in range(n)]
        if not payload.get("stream"):
            await self._json(peer, 200, self._whole(rid, chat, texts))
            return
        await peer.write(h11.Response(status_code=200, headers=[
            ("content-type", "text/event-stream"), ("cache-control", "no-cache")]))
        base = {"id": rid, "object": "chat.completion.chunk" if chat else "text_completion",
                "created": int(time.time()), "model": cfg.model}
        writes: list[int] = []
        if chat and cfg.role_chunk:
            role = {**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                "content": ""}}]}
            await self._event(peer, role)
        k = cfg.tokens_per_chunk
        t0 = arrival / 1e9
        chunks = [(i, min(i + k, n)) for i in range(0, n, k)]
        for j, (a, b) in enumerate(chunks):
            due = t0 + (cfg.ttft_ms + j * cfg.itl_ms) / 1e3
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            last = b == n
            choice: dict[str, Any]
            reasoning = "".join(texts[i] for i in range(a, min(b, cfg.reasoning_tokens)))
            content = "".join(texts[i] for i in range(max(a, cfg.reasoning_tokens), b))
            if chat:
                delta: dict[str, Any] = {}
                if reasoning:
                    delta[cfg.reasoning_field] = reasoning
                if content:
                    delta["content"] = content
                choice = {"index": 0, "delta": delta, "finish_reason": "length" if last else None}
            else:
                choice = {"index": 0, "text": reasoning + content,
                          "finish_reason": "length" if last else None}
            writes.append(await self._event(peer, {**base, "choices": [choice]}))
        options = payload.get("stream_options") or {}
        if cfg.usage and options.get("include_usage"):
            prompt_tokens = len(str(payload.get("prompt") or payload.get("messages") or "")) // 4
            await self._event(peer, {**base, "choices": [], "usage": {
                "prompt_tokens": prompt_tokens, "completion_tokens": n,
                "total_tokens": prompt_tokens + n}})
        await peer.write(h11.Data(data=b"data: [DONE]\n\n"))
        await peer.write(h11.EndOfMessage())
        self._record({"id": rid, "arrival_ns": arrival, "content_writes_ns": writes,
                      "completion_tokens": n, "tokens_per_chunk": k,
                      "kernel_clock": peer.kernel_clock})

    async def _event(self, peer: _Peer, obj: dict[str, Any]) -> int:
        return await peer.write(h11.Data(data=b"data: " + json.dumps(obj).encode() + b"\n\n"))

    def _whole(self, rid: str, chat: bool, texts: list[str]) -> dict[str, Any]:
        text = "".join(texts)
        choice: dict[str, Any] = (
            {"index": 0, "message": {"role": "assistant", "content": text},
             "finish_reason": "length"} if chat
            else {"index": 0, "text": text, "finish_reason": "length"})
        return {"id": rid, "object": "chat.completion" if chat else "text_completion",
                "model": self.config.model, "choices": [choice],
                "usage": {"prompt_tokens": 0, "completion_tokens": len(texts),
                          "total_tokens": len(texts)}}

    def _record(self, row: dict[str, Any]) -> None:
        if self._truth is not None:
            self._truth.write(json.dumps(row) + "\n")
            self._truth.flush()
