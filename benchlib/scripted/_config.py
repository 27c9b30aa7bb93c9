"""What the scripted server does, knob by knob, including the faults it can inject."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["FAULT_KINDS", "FaultKind", "FaultRule", "ScriptConfig"]

FaultKind = Literal[
    "http-500", "http-429", "json-body", "close-no-response", "reset", "close-mid-stream",
    "no-done", "bad-json", "error-event", "stall", "huge-chunk", "empty-choices",
]
#: What each fault does to a selected streamed request (see :mod:`benchlib.scripted._server`).
FAULT_KINDS: dict[str, str] = {
    "http-500": "answer 500 with an OpenAI-style JSON error body",
    "http-429": "answer 429 (Retry-After: 1) with an OpenAI-style JSON error body",
    "json-body": "answer 200 with a whole JSON completion, not an event stream",
    "close-no-response": "close the connection without answering",
    "reset": "send half the content chunks, then reset the connection (RST)",
    "close-mid-stream": "send half the content chunks, then close the connection (FIN)",
    "no-done": "end the response normally but never send data: [DONE]",
    "bad-json": "send an event that is not valid JSON halfway through",
    "error-event": "send half the content chunks, then an error event and [DONE]",
    "stall": "send half the content chunks, then nothing until the client hangs up",
    "huge-chunk": "one content chunk (halfway) carries huge_chunk_bytes of text (succeeds)",
    "empty-choices": "a `choices: []` event before every content chunk (succeeds)",
}
assert set(FAULT_KINDS) == set(get_args(FaultKind))


class FaultRule(BaseModel):
    """One fault and which streamed requests it hits, by the server's request count (1, 2, …).

    ``every=N`` hits requests ``start, start+N, start+2N, …`` (``start`` defaults to ``N``);
    ``fraction=F`` hits ``F`` of the requests spread evenly (request ``n`` is hit when
    ``⌊nF⌋ > ⌊(n−1)F⌋``); neither hits every request. The selection is deterministic, so a
    run knows how many of its requests fail and how.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: FaultKind
    every: int | None = Field(None, ge=1)
    start: int | None = Field(None, ge=1)
    fraction: float | None = Field(None, gt=0, le=1)

    @model_validator(mode="after")
    def _one_selector(self) -> FaultRule:
        if self.every is not None and self.fraction is not None:
            raise ValueError("give every=N or fraction=F, not both")
        if self.start is not None and self.every is None:
            raise ValueError("start=K needs every=N")
        return self

    def selects(self, n: int) -> bool:
        """Whether the ``n``-th streamed request (1-based) gets this fault."""
        if self.every is not None:
            first = self.start if self.start is not None else self.every
            return n >= first and (n - first) % self.every == 0
        if self.fraction is not None:
            return math.floor(n * self.fraction + 1e-9) > math.floor((n - 1) * self.fraction
                                                                      + 1e-9)
        return True

    @classmethod
    def parse(cls, spec: str) -> FaultRule:
        """``KIND``, ``KIND:every=N[:start=K]`` or ``KIND:fraction=F`` (the CLI's spelling).

        Raises ``ValueError`` (or pydantic's ``ValidationError``, a subclass) on a bad spec.
        """
        kind, *opts = spec.split(":")
        fields: dict[str, str] = {}
        for opt in opts:
            key, sep, value = opt.partition("=")
            if not sep or key not in ("every", "start", "fraction"):
                raise ValueError(f"{spec!r}: expected KIND[:every=N[:start=K]|:fraction=F]")
            fields[key] = value
        return cls.model_validate({"kind": kind, **fields})


class ScriptConfig(BaseModel):
    """Timings and stream shape of the scripted server (GuideLLM's mock server has the same
    idea: known ttft/itl knobs), plus injected faults. Every field is checked: unknown keys
    are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = "scripted"
    ttft_ms: float = Field(20.0, ge=0, description="request arrival → first content chunk")
    itl_ms: float = Field(5.0, ge=0, description="gap between content chunks")
    jitter: float = Field(
        0.0, ge=0, le=2, description="spread: each request's TTFT and each gap between its "
                                     "chunks is scaled by a log-normal factor, median 1 and "
                                     "sigma = jitter in log space (0.3: 90 % within ×0.61–×1.64, "
                                     "a long right tail), as a real engine's times vary (0: "
                                     "exact knobs)")
    jitter_seed: int = Field(
        0, description="seeds the jitter factors with the request's count (1, 2, …): two "
                       "servers with the same settings draw the same factors for their n-th "
                       "requests (an A/A pair)")
    tokens_per_chunk: int = Field(1, ge=1, description="tokens carried by each content chunk")
    output_tokens: int | None = Field(
        None, ge=1, description="tokens per answer; default: the request's max_tokens"
    )
    default_max_tokens: int = Field(16, ge=1)
    role_chunk: bool = Field(True, description="chat: send a role-only chunk at once")
    reasoning_tokens: int = Field(0, ge=0, description="leading tokens sent as reasoning")
    reasoning_field: Literal["reasoning_content", "reasoning"] = "reasoning_content"
    usage: bool = Field(True, description="honour stream_options.include_usage")
    faults: tuple[FaultRule, ...] = Field(
        (), description="faults to inject; the first rule that selects a request applies")
    huge_chunk_bytes: int = Field(4 << 20, ge=1, description="text size of a huge-chunk chunk")
    idle_timeout_s: float | None = Field(
        None, gt=0, description="close keep-alive connections idle this long (uvicorn: 5 s)")
    close_after_stream_ms: float | None = Field(
        None, ge=0, description="close the connection this many ms after every streamed "
                                "response although the headers allow keep-alive "
                                "(llama-server does at once: cpp-httplib ends a chunked "
                                "stream by closing); a delay opens the reuse race wide")
    required_headers: tuple[tuple[str, str], ...] = Field(
        (), description="(name, value) pairs every request but /health must carry, or it is "
                        "answered 401 (a hosted API's key check)")
    max_streams: int | None = Field(
        None, ge=1, description="generate at most this many streams at once (an engine's "
                                "max_num_seqs): a request beyond them waits, first come first "
                                "served, and its schedule (ttft, then itl) starts when a slot "
                                "frees, so TTFT jumps at a known concurrency (a saturation "
                                "point the SLO search must find)")
    prefix_cache: bool = Field(
        False, description="report, per response, how much of the prompt an earlier prompt "
                           "began with, as llama.cpp reports its cache (timings.cache_n and "
                           "prompt_n in the last event); timings are not changed by it")
    crash_above_prompt_chars: int | None = Field(
        None, ge=1, description="exit the whole server (an engine crash, like seed 003's Xid "
                                "on a long chat) when a prompt longer than this arrives")

    def authorized(self, headers: Sequence[tuple[bytes, bytes]]) -> bool:
        """Whether ``headers`` (h11's: names lower-cased) carry every required header."""
        given = {(n.decode("latin-1"), v.decode("latin-1")) for n, v in headers}
        return all((n.lower(), v) in given for n, v in self.required_headers)

    def schedule_ms(self, n: int, chunks: int) -> list[float]:
        """When the ``n``-th streamed request's content chunks are due, in ms after its
        start: ``ttft + k × itl`` without jitter, each term scaled by its own factor with."""
        if not self.jitter:
            return [self.ttft_ms + k * self.itl_ms for k in range(chunks)]
        rng = random.Random(f"{self.jitter_seed}/{n}")
        out = []
        t = self.ttft_ms * rng.lognormvariate(0.0, self.jitter)
        for _ in range(chunks):
            out.append(t)
            t += self.itl_ms * rng.lognormvariate(0.0, self.jitter)
        return out

    def fault_for(self, n: int) -> FaultKind | None:
        """The fault the ``n``-th streamed request (1-based) gets, if any."""
        for rule in self.faults:
            if rule.selects(n):
                return rule.kind
        return None
