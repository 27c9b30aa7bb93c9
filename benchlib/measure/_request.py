"""What is sent for one prompt, and what its captured stream means.

:func:`build_body` makes the JSON body ``vllm bench serve`` would send (streamed, with
``stream_options.include_usage``). :func:`decode_capture` turns a
:class:`~benchlib.measure._connection.StreamCapture` into a :class:`RequestOutcome` that holds
two views of the same events, so that keys named like the reference's mean what the
reference means and ours are named apart:

* the reference's (``vllm bench serve`` 0.32, ``lib/endpoint_request_func.py``): TTFT at the
  first event with non-empty ``choices`` (a role-only chat chunk counts), one ITL per later
  such event, E2EL at the last one (the usage event and ``[DONE]`` do not count);
* benchlib's: TTFT at the first event that carries generated text (content, reasoning —
  ``reasoning_content`` or ``reasoning`` — or tool-call text), with its lower bound
  (:mod:`benchlib.measure._timing`); gaps between text-carrying events, where a gap between
  two events of one read is counted apart instead of reported as a 0 ms ITL.

Tokens are never chunks: the output length comes from the server's usage, or, flagged, from
the tokenizer. A server that reports its own per-request work (llama.cpp's ``timings``:
``prompt_n``, ``predicted_n``, ``draft_n``, ``draft_n_accepted``, ``predicted_ms`` …, on its
last streamed event) has the last such object kept in ``server_timings``.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from benchlib.measure._connection import StreamCapture
from benchlib.measure._timing import event_times

__all__ = ["EndpointKind", "Prompt", "RequestOutcome", "build_body", "decode_capture"]

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
    no sampling key at all (:mod:`benchlib.measure._sampling`). The length keys
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


def _error_message(body: bytes) -> str:
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return body[:200].decode("utf-8", "replace").strip()
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or err)[:500]
        return str(err)[:500]
    return str(obj)[:500]


def _numbers(obj: dict[str, Any]) -> dict[str, float]:
    """The finite numeric entries of a server's ``timings`` object, as floats (the rest
    dropped: a record line stays strict JSON)."""
    return {str(k): float(v) for k, v in obj.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)}


def _delta_text(choice: dict[str, Any], kind: EndpointKind) -> tuple[str, str, str]:
    """(content, reasoning, tool text) carried by one streamed choice."""
    if kind == "completions":
        return choice.get("text") or "", "", ""
    delta = choice.get("delta") or {}
    content = delta.get("content") or ""
    reasoning = delta.get("reasoning_content") or delta.get("reasoning") or ""
    tool = ""
    for call in delta.get("tool_calls") or ():
        fn = call.get("function") or {}
        tool += (fn.get("name") or "") + (fn.get("arguments") or "")
    return content, reasoning, tool


def decode_capture(index: int, prompt_len: int, capture: StreamCapture,
                   kind: EndpointKind) -> RequestOutcome:
    """Interpret a captured response. Never raises: every fault becomes ``error``."""
    times = event_times(capture)
    out = RequestOutcome(index=index, prompt_len=prompt_len, start_ns=capture.start_ns,
                         http_status=capture.status, kernel_clock=capture.kernel_clock,
                         end_ns=capture.end_ns, clock=times.clock,
                         clock_stepped=times.clock_stepped, read_lags_ns=times.read_lags,
                         reads=times.reads, stamped_reads=times.stamped_reads,
                         synthetic=capture.synthetic)
    if capture.status is not None and capture.status != 200:
        out.error = f"HTTP {capture.status}: {_error_message(bytes(capture.body))}"
        return out
    if capture.error is not None and not capture.events:
        out.error = capture.error
        return out
    if capture.status == 200 and "text/event-stream" not in capture.content_type:
        out.error = ("server answered with a JSON body, not an event stream "
                     f"(content-type {capture.content_type or 'missing'!r})")
        return out
    content: list[str] = []
    reasoning: list[str] = []
    tools: list[str] = []
    last_choice_ns: int | None = None
    last_choice_lower_ns = 0
    first_choice = -1  # the event index of the first event with non-empty choices
    prev_ns: int | None = None
    for n, (_, payload) in enumerate(capture.events):
        if payload == b"[DONE]":
            continue
        arrival = times.upper[n]
        try:
            obj = json.loads(payload)
        except (ValueError, RecursionError):
            out.error = f"SSE event #{n + 1} is not valid JSON: {payload[:80]!r}"
            return out
        if not isinstance(obj, dict):
            out.error = f"SSE event #{n + 1} is not a JSON object: {payload[:80]!r}"
            return out
        if obj.get("error") or obj.get("object") == "error":
            out.error = f"server error in stream: {_error_message(payload)}"
            return out
        try:  # any JSON can arrive here: a wrong shape is this request's named error
            if not out.response_id and obj.get("id"):
                out.response_id = str(obj["id"])
            usage = obj.get("usage")
            if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
                out.output_tokens = int(usage["completion_tokens"])
                out.output_tokens_source = "usage"
                if usage.get("prompt_tokens") is not None:
                    out.server_prompt_tokens = int(usage["prompt_tokens"])
            timings = obj.get("timings")
            if isinstance(timings, dict):
                out.server_timings = _numbers(timings)
            choices = obj.get("choices")
            if not choices:
                continue
            choice = choices[0]
            finish = choice.get("finish_reason")
            c, r, t = _delta_text(choice, kind)
            text = r + c + t
        except (AttributeError, TypeError, ValueError, KeyError, IndexError,
                OverflowError) as exc:
            out.error = (f"SSE event #{n + 1} has an unexpected shape ({type(exc).__name__}: "
                         f"{exc}): {payload[:80]!r}")
            return out
        # vLLM's view: every event with non-empty choices is a "token"
        if last_choice_ns is None:
            out.ttft_ns = arrival - capture.start_ns
            out.ttft_lower_ns = times.lower[n] - capture.start_ns
            first_choice = n
        else:
            out.itl_ns.append(arrival - last_choice_ns)
        last_choice_ns = arrival
        last_choice_lower_ns = times.lower[n]
        if finish:
            out.finish_reason = str(finish)
        if not text:
            continue
        content.append(c)
        reasoning.append(r)
        tools.append(t)
        if prev_ns is None:
            out.ttft_text_ns = arrival - capture.start_ns
            out.ttft_text_lower_ns = times.lower[n] - capture.start_ns
            out.ttft_text_exact = times.exact[n]
        else:
            out.text_gaps_ns.append(arrival - prev_ns)
            out.text_gap_measured.append(times.read[n] != out.chunk_reads[-1])
        out.chunk_times_ns.append(arrival)
        out.chunk_reads.append(times.read[n])
        out.chunk_texts.append(text)
        prev_ns = arrival
    out.text, out.reasoning, out.tool_text = "".join(content), "".join(reasoning), "".join(tools)
    if capture.error is not None:
        out.error = capture.error
    elif not capture.saw_done:
        out.error = "stream ended without [DONE]"
    elif last_choice_ns is None or (out.ttft_text_ns is None and not (
            out.output_tokens_source == "usage" and out.output_tokens > 0)):
        out.error = "stream carried no generated text"
    else:
        if out.ttft_text_ns is None:  # tokens counted by the server, none rendered as text
            out.text_free = True
            out.ttft_text_ns = out.ttft_ns
            out.ttft_text_lower_ns = times.lower[first_choice] - capture.start_ns
            out.ttft_text_exact = times.exact[first_choice]
        out.latency_ns = last_choice_ns - capture.start_ns
        out.latency_lower_ns = last_choice_lower_ns - capture.start_ns
        out.end_ns = last_choice_ns
        out.success = True
    return out


def chunk_token_counts(outcome: RequestOutcome, tokenizer: Any | None) -> list[float]:
    """How many tokens each text-carrying chunk held.

    With a fast tokenizer: re-tokenize the whole generated text once and give each token to
    the chunk its first character arrived in. Without one: the server's total spread evenly.
    Scaled to the server's count when there is one. Used to split ITL per token and to bucket
    tokens in time, never to count the output.
    """
    texts = outcome.chunk_texts
    if not texts:
        return []
    if tokenizer is not None:
        try:
            enc = tokenizer(outcome.generated, add_special_tokens=False,
                            return_offsets_mapping=True)
            offsets = enc["offset_mapping"]
        except (NotImplementedError, KeyError, TypeError, ValueError):
            offsets = None
        if offsets:
            bounds: list[int] = []
            pos = 0
            for t in texts:
                pos += len(t)
                bounds.append(pos)
            counts = [0.0] * len(texts)
            for start, _ in offsets:
                counts[min(bisect.bisect_right(bounds, start), len(texts) - 1)] += 1
            total = sum(counts)
            if outcome.output_tokens and total:
                # the server's tokens are the truth; re-tokenizing only says how they split
                scale = outcome.output_tokens / total
                counts = [c * scale for c in counts]
            return counts
    per = outcome.output_tokens / len(texts) if outcome.output_tokens else 0.0  # never chunks
    return [per] * len(texts)
