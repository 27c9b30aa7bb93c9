"""What an application sees: a scenario's requests sent again through the ``openai`` SDK's
async streaming client, timed as an application times them, beside the wire-accurate figures.

The SDK view takes the measurement's own settings (endpoint, dataset, lengths, sampling,
``max_concurrency``, all requests released at once, the same untimed warmups) with its own seed
(:mod:`benchlib.measure.workload._seeds`), so its prompts have the same shape but are new
to the engine:
the same prompts would hit the prefix cache and make the SDK look faster than the wire. Each
request's clock starts before ``create()`` and reads ``time.perf_counter()`` as the SDK yields
each chunk that carries text (content, reasoning or completion text); output tokens come from
the stream's usage. The differences of the medians from the wire run's (``ttft_overhead_ms``,
``tpot_overhead_ms``) are the client-side cost an application pays on top of what the engine
did — SDK parsing, its HTTP stack, the event loop — within the noise of two samples of the same
engine (so they can come out negative).

One failure is not the engine's: a server that hangs up a kept-alive connection just as the
next request goes out on it (llama-server does, now and then, after a streamed response)
fails that request before any response. The wire client replaces such connections; here the
request is sent once more on a new connection, as the SDK's own retries would (without their
back-off), its clock running from the first attempt, and counted (``reconnects``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import statistics
import time
from typing import Any

from pydantic import BaseModel, Field

from benchlib.checks._delta import reasoning_text
from benchlib.measure import (
    Endpoint,
    MeasureConfig,
    build_requests,
    load_tokenizer,
    run_coroutine,
    sdk_seed,
)

__all__ = ["SdkView", "sdk_view"]

_KNOWN = {"model", "messages", "prompt", "stream", "stream_options", "max_tokens",
          "max_completion_tokens", "temperature"}


class SdkView(BaseModel):
    """A scenario at one concurrency as the ``openai`` SDK's streaming client saw it."""

    client: str = Field(description="the SDK and its version")
    seed: int = Field(description="the seed of its prompts (benchlib.measure.sdk_seed of the "
                                  "wire run's: none of them repeats a measured prompt)")
    completed: int = Field(description="requests that streamed to the end")
    failed: int = Field(description="requests that raised")
    median_ttft_ms: float | None = Field(description="create() → first chunk with text")
    median_tpot_ms: float | None = Field(
        description="(last text chunk − first) / (output tokens − 1), per request")
    median_e2el_ms: float | None = Field(description="create() → end of the stream")
    ttft_overhead_ms: float | None = Field(
        None, description="median_ttft_ms − the wire run's median TTFT of the first text")
    tpot_overhead_ms: float | None = Field(
        None, description="median_tpot_ms − the wire run's median TPOT after the first text")
    first_error: str | None = Field(None, description="the first failure's message")
    reconnects: int = Field(0, description="requests sent again on a new connection because "
                            "the server hung up the kept-alive one before any response "
                            "(their time is in their TTFT)")


def _text(chunk: Any) -> str:
    parts = []
    for choice in getattr(chunk, "choices", None) or []:
        delta = getattr(choice, "delta", None)
        if delta is not None:
            parts.append(delta.content or "")
            parts.append(reasoning_text(delta))
        else:
            parts.append(getattr(choice, "text", "") or "")
    return "".join(p for p in parts if isinstance(p, str))


def _hung_up(exc: BaseException) -> bool:
    """The SDK's connection error for a server that closed the connection before any byte of
    a response (httpx's, or httpx2's, RemoteProtocolError raised before the headers)."""
    import openai

    return (isinstance(exc, openai.APIConnectionError)
            and type(exc.__cause__).__name__ == "RemoteProtocolError")


async def _one(client: Any, kind: str, body: dict[str, Any]) -> tuple[float, float, float,
                                                                       int, bool]:
    """One streamed request: TTFT, TPOT, E2EL (ms), output tokens, and whether it had to be
    sent again on a new connection."""
    known = {k: v for k, v in body.items() if k in _KNOWN and k != "stream"}
    extra = {k: v for k, v in body.items() if k not in _KNOWN}
    create = client.chat.completions.create if kind == "chat" else client.completions.create
    start = time.perf_counter()
    reconnected = False
    try:
        stream = await create(stream=True, extra_body=extra, **known)
    except Exception as exc:
        if not _hung_up(exc):
            raise
        reconnected = True  # the broken connection is gone from the pool: a new one now
        stream = await create(stream=True, extra_body=extra, **known)
    first = last = None
    tokens = 0
    async for chunk in stream:
        now = time.perf_counter()
        if _text(chunk):
            first = first if first is not None else now
            last = now
        usage = getattr(chunk, "usage", None)
        if usage is not None and usage.completion_tokens is not None:
            tokens = usage.completion_tokens
    end = time.perf_counter()
    if first is None or last is None:
        raise RuntimeError("the stream carried no text")
    tpot = (last - first) / (tokens - 1) if tokens > 1 else float("nan")
    return (first - start) * 1000, tpot * 1000, (end - start) * 1000, tokens, reconnected


async def _all(cfg: MeasureConfig, bodies: list[dict[str, Any]], api_key: str | None
               ) -> list[tuple[float, float, float, int, bool] | BaseException]:
    import openai

    verify: ssl.SSLContext | bool = True
    if cfg.base_url.startswith("https://"):  # the measurement's own TLS settings
        verify = Endpoint.parse(cfg.base_url, ca_bundle=cfg.ca_bundle,
                                insecure=cfg.insecure).tls_context()
    client = openai.AsyncOpenAI(base_url=cfg.base_url.rstrip("/") + "/v1",
                                api_key=api_key or "EMPTY", timeout=cfg.request_timeout,
                                max_retries=0,
                                http_client=openai.DefaultAsyncHttpxClient(verify=verify))
    gate = asyncio.Semaphore(cfg.max_concurrency or len(bodies))

    async def limited(body: dict[str, Any]) -> tuple[float, float, float, int, bool]:
        async with gate:
            return await _one(client, cfg.endpoint, body)

    try:
        for _ in range(cfg.num_warmups):  # as the wire run: the first prompt, untimed
            with contextlib.suppress(Exception):
                await _one(client, cfg.endpoint, bodies[0])
        return list(await asyncio.gather(*(limited(b) for b in bodies),
                                         return_exceptions=True))
    finally:
        await client.close()


def _describe(exc: BaseException) -> str:
    """An error and what caused it (the SDK's "Connection error." says nothing alone)."""
    cause = f" ({type(exc.__cause__).__name__}: {exc.__cause__})" if exc.__cause__ else ""
    return f"{type(exc).__name__}: {exc}{cause}"[:300]


def _median(values: list[float]) -> float | None:
    finite = [v for v in values if v == v]
    return statistics.median(finite) if finite else None


def sdk_view(cfg: MeasureConfig, api_key: str | None = None,
             wire: dict[str, Any] | None = None) -> SdkView:
    """Send ``cfg``'s requests (their own seed, :func:`~benchlib.measure.sdk_seed`) through
    ``openai.AsyncOpenAI`` and time them as an application would; with ``wire`` (the wire
    run's result), the overheads."""
    import openai

    seeded = cfg.model_copy(update={"seed": sdk_seed(cfg.seed)})
    tokenizer = load_tokenizer(cfg.tokenizer) if cfg.tokenizer is not None else None
    _, raw = build_requests(seeded, tokenizer)
    bodies = [json.loads(b) for b in raw]
    outcomes = run_coroutine(_all(seeded, bodies, api_key))  # a kernel's loop runs already
    ok = [o for o in outcomes if not isinstance(o, BaseException)]
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    view = SdkView(client=f"openai {openai.__version__}", seed=seeded.seed, completed=len(ok),
                   failed=len(errors), median_ttft_ms=_median([o[0] for o in ok]),
                   median_tpot_ms=_median([o[1] for o in ok]),
                   median_e2el_ms=_median([o[2] for o in ok]),
                   first_error=_describe(errors[0]) if errors else None,
                   reconnects=sum(o[4] for o in ok))
    if wire:
        ttft = wire.get("median_ttft_text_ms") or wire.get("median_ttft_ms")
        tpot = wire.get("median_tpot_text_ms") or wire.get("median_tpot_ms")
        view = view.model_copy(update={
            "ttft_overhead_ms": view.median_ttft_ms - ttft
            if view.median_ttft_ms is not None and ttft is not None else None,
            "tpot_overhead_ms": view.median_tpot_ms - tpot
            if view.median_tpot_ms is not None and tpot is not None else None})
    return view
