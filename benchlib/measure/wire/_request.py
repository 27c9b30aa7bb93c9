"""What is sent for one prompt (:func:`build_body`) and what one request produced
(:class:`RequestOutcome`); reading its captured stream into an outcome is
:mod:`benchlib.measure.wire._decode`'s.

:func:`build_body` makes the JSON body ``vllm bench serve`` would send (streamed, with
``stream_options.include_usage``). :func:`~benchlib.measure.wire._decode.decode_capture` turns a
:class:`~benchlib.measure.wire._connection.StreamCapture` into a :class:`RequestOutcome` that holds
two views of the same events, so that keys named like the reference's mean what the
reference means and ours are named apart:

* the reference's (``vllm bench serve`` 0.32, ``lib/endpoint_request_func.py``): TTFT at the
  first event with non-empty ``choices`` (a role-only chat chunk counts), one ITL per later
  such event, E2EL at the last one (the usage event and ``[DONE]`` do not count);
* benchlib's: TTFT at the first event that carries generated text (content, reasoning —
  ``reasoning_content`` or ``reasoning`` — or tool-call text), with its lower bound
  (:mod:`benchlib.measure.wire._timing`); gaps between text-carrying events, where a gap between
  two events of one read is counted apart instead of reported as a 0 ms ITL.

Tokens are never chunks: the output length comes from the server's usage, or, flagged, from
the tokenizer. A server that reports its own per-request work (llama.cpp's ``timings``:
``prompt_n``, ``predicted_n``, ``draft_n``, ``draft_n_accepted``, ``predicted_ms`` …, on its
last streamed event) has the last such object kept in ``server_timings``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["API_PATHS", "EndpointKind", "Prompt", "RequestOutcome", "build_body"]

EndpointKind = Literal["completions", "chat"]

API_PATHS: dict[str, str] = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


@dataclass(frozen=True, slots=True)
class Prompt:
    """One dataset entry: text (or chat messages), its token count, the output length asked."""

    prompt: str | list[dict[str, Any]]
    prompt_len: int
    output_len: int | None


def build_body(prompt: Prompt, kind: EndpointKind, model: str, *, ignore_eos: bool,
               sampling: dict[str, Any] | str | None = None) -> bytes:
    """The request body, as ``vllm bench serve`` builds it for the ``openai`` backends;
    ``sampling``: extra keys over the kit's ``temperature: 0``, or ``"server-default"`` for
    no sampling key at all (:mod:`benchlib.measure.workload._sampling`). The length keys
    (``max_tokens`` / ``max_completion_tokens``, ``ignore_eos``) are set either way."""
    body: dict[str, Any] = {"model": model, "stream": True,
                            "stream_options": {"include_usage": True}}
    if kind == "chat":
        messages = (prompt.prompt if isinstance(prompt.prompt, list)
                    else [{"role": "user", "content": prompt.prompt}])
        body["messages"] = messages
        if prompt.output_len is not None:
            body["max_completion_tokens"] = prompt.output_len
    else:
        if isinstance(prompt.prompt, list):
            raise ValueError("chat messages need --endpoint chat")
        body["prompt"] = prompt.prompt
        if prompt.output_len is not None:
            body["max_tokens"] = prompt.output_len
    if sampling != "server-default":
        body["temperature"] = 0.0
    if ignore_eos:
        body["ignore_eos"] = True
    if isinstance(sampling, dict):
        body.update(sampling)
    return json.dumps(body, ensure_ascii=False).encode()


@dataclass(slots=True)
class RequestOutcome:
    """One request, interpreted. Times are ``perf_counter_ns`` values; durations in ns.

    Two views of the same events. ``vllm bench serve``'s (its keys keep its meaning):
    ``ttft_ns``, ``itl_ns`` and ``latency_ns`` are the first event with non-empty
    ``choices``, the gaps between consecutive such events, and the last one. benchlib's:
    ``ttft_text_ns`` is the first event carrying generated text (a role-only chat chunk does
    not count), bounded below by ``ttft_text_lower_ns``; ``text_gaps_ns`` are the gaps between
    text-carrying events, and ``text_gap_measured[k]`` is False where both events came out of
    one read (a 0 that measures nothing).
    """

    index: int
    prompt_len: int
    start_ns: int
    success: bool = False
    error: str = ""
    http_status: int | None = None
    response_id: str = ""
    finish_reason: str | None = None
    ttft_ns: int | None = None
    latency_ns: int | None = None
    #: lower bounds of the first and last choices events' arrivals (vLLM's view), as
    #: ``ttft_text_lower_ns`` is of the first text: equal to the value where it is exact
    ttft_lower_ns: int | None = None
    latency_lower_ns: int | None = None
    itl_ns: list[int] = field(default_factory=list)
    ttft_text_ns: int | None = None
    ttft_text_lower_ns: int | None = None
    ttft_text_exact: bool = False
    text_gaps_ns: list[int] = field(default_factory=list)
    text_gap_measured: list[bool] = field(default_factory=list)
    #: arrival time, read and generated text of every event that carried generated text
    chunk_times_ns: list[int] = field(default_factory=list)
    chunk_reads: list[int] = field(default_factory=list)
    chunk_texts: list[str] = field(default_factory=list)
    text: str = ""
    reasoning: str = ""
    tool_text: str = ""
    output_tokens: int = 0
    output_tokens_source: Literal["usage", "tokenizer", "none"] = "none"
    server_prompt_tokens: int | None = None
    #: answered by benchlib's scripted server (canned timings), not an engine
    synthetic: bool = False
    #: the server counted generated tokens but no event carried text (ids the tokenizer cannot
    #: render: dummy weights served with a smaller tokenizer): timed by the choices events
    text_free: bool = False
    kernel_clock: bool = False
    #: the clock this request's times come from, and whether a clock step was caught
    clock: Literal["kernel", "userspace"] = "userspace"
    clock_stepped: bool = False
    read_lags_ns: list[int] = field(default_factory=list)
    reads: int = 0
    stamped_reads: int = 0
    #: when the request ended: its last choices event on success, else when it was given up
    end_ns: int = 0
    #: when the load generator released it (its scheduled send); the wait until
    #: ``start_ns`` is client-side queueing (a concurrency slot, a connection)
    release_ns: int | None = None
    #: when the seeded schedule had it due (the load's start + its arrival offset): a release
    #: after this (a start that reached a worker late, a busy event loop) shifts the arrival
    #: pattern the server saw
    due_ns: int | None = None
    #: whether the load was paced (a finite request rate, a trace's timestamps): only then
    #: is ``due_ns`` an instant a user asked for, and TTFT from the schedule meaningful
    paced: bool = False
    #: the last ``timings`` object the server put in an event (llama.cpp's ``prompt_n``,
    #: ``predicted_n``, ``draft_n``, ``draft_n_accepted`` …): its own count of the work
    server_timings: dict[str, float] | None = None
    #: a conversation's turn: its session (0-based) and position in it (None: not one)
    session: int | None = None
    turn: int | None = None

    @property
    def generated(self) -> str:
        """Everything generated, in arrival order (reasoning, content and tool-call text)."""
        return "".join(self.chunk_texts)

    @property
    def release_lag_ns(self) -> int | None:
        """How late the client released it against its schedule (``None``: not scheduled)."""
        if self.release_ns is None or self.due_ns is None:
            return None
        return max(0, self.release_ns - self.due_ns)

    @property
    def ttft_from_schedule_ns(self) -> int | None:
        """TTFT counted from the instant the schedule had the request due, not from its
        send: benchlib's TTFT (to the first text) plus the release lag plus the client
        queue (GuideLLM's scheduled-time view). ``None`` unless the load was paced and the
        request saw text."""
        if not self.paced or self.due_ns is None or self.ttft_text_ns is None:
            return None
        return self.ttft_text_ns + (self.start_ns - self.due_ns)

    @property
    def queue_ns(self) -> int:
        """Client-side queueing: release → send (vLLM's ``client_queue_time``)."""
        return max(0, self.start_ns - self.release_ns) if self.release_ns is not None else 0

    @property
    def coalesced_gaps(self) -> int:
        """Gaps between text events that one read delivered together (not measured)."""
        return self.text_gap_measured.count(False)
