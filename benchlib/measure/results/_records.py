"""The per-request record: one typed line of ``<result stem>.requests.jsonl`` per request.

Nothing measured is lost: each request's record goes to the file the moment it ends, as one
``write`` of one whole line to a file opened ``O_APPEND`` (so it is in the kernel's page
cache, not a Python buffer, when the next request is handled). A run killed even with SIGKILL
keeps every finished request's line; at worst the very last line is cut short, and
:func:`read_requests` drops it. The file is started afresh by each run.

:class:`RequestRecord`'s field descriptions are the documentation of the file's keys. Times
are milliseconds on the request's own clock (its send is 0) unless named otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchlib._secrets import scrub_text
from benchlib.measure.wire._request import RequestOutcome

__all__ = ["RecordLog", "RequestRecord", "read_requests", "requests_path"]

_MS = 1e6


def _ms(ns: int | None) -> float | None:
    return ns / _MS if ns is not None else None


class RequestRecord(BaseModel):
    """One request: benchlib's TTFT with its bounds, vLLM's view beside it, what came back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(description="the request's position in the dataset (0-based); lines "
                                   "are in completion order")
    success: bool = Field(description="a 200 event stream that ended with [DONE], carried "
                                      "generated text (or tokens the server counted, see "
                                      "text_free) and has a known output token count")
    text_free: bool = Field(
        False, description="the server counted generated tokens but no event carried text "
        "(ids the tokenizer cannot render: dummy weights served with a smaller tokenizer); "
        "ttft_ms is then the first event with choices, vLLM's TTFT, and no ITL is split per "
        "token")
    error: str = Field(description='why it failed, in words a user can act on ("" on '
                                   "success); an API key the server echoed is written ***")
    http_status: int | None = Field(description="the response's HTTP status (null: none came)")
    response_id: str = Field(description='the id of the server\'s completion ("": none seen)')
    start_s: float | None = Field(
        description="this request's send, in seconds after the send of the first request to "
                    "end (the file's first line; so it can be negative); null: never sent")
    queue_ms: float = Field(description="release → send: waiting for a concurrency slot or a "
                                        "connection (vLLM's client queue time)")
    ttft_ms: float | None = Field(
        description="send → first event carrying generated text (upper bound: kernel stamp "
                    "of the read that completed it); null: no text arrived")
    ttft_lower_ms: float | None = Field(
        description="lower bound of that arrival: the previous read's stamp, or the send; "
                    "equal to ttft_ms when it is exact")
    ttft_exact: bool = Field(
        description="the event's last byte was its read's last byte and the read was "
                    "kernel-stamped: ttft_ms is the exact arrival")
    ttft_first_choice_ms: float | None = Field(
        description="vLLM's TTFT: send → first event with non-empty choices (a role-only chat "
                    "chunk counts)")
    tpot_ms: float | None = Field(
        description="(e2el_ms − ttft_ms) / (output_tokens − 1), from the first text; null "
                    "unless the request succeeded with more than one token")
    e2el_ms: float | None = Field(
        description="send → last event with non-empty choices (vLLM's E2EL; usage event and "
                    "[DONE] excluded); null unless the request succeeded")
    itl_ms: list[float] = Field(
        description="vLLM's ITLs: gaps between consecutive events with non-empty choices, one "
                    "per chunk (not per token)")
    itl_text_only_ms: list[float] = Field(
        description="gaps between text-carrying events that were measured: gaps inside one "
                    "read are not here but in coalesced_gaps")
    coalesced_gaps: int = Field(
        description="gaps between text events that one read delivered together: unmeasured, "
                    "never reported as a 0 ms ITL")
    chunk_tokens: list[float] = Field(
        description="tokens each text-carrying chunk held (re-tokenized, scaled to the "
                    "server's count; empty for a failed request): splits ITL per token and "
                    "buckets tokens in time, never counts the output")
    prompt_len: int = Field(description="prompt tokens as the dataset counted them (0: a file "
                                        "prompt without a tokenizer)")
    server_prompt_tokens: int | None = Field(
        description="the server's usage.prompt_tokens (null: it sent none)")
    output_tokens: int | None = Field(
        description="generated tokens: the server's usage.completion_tokens, or the "
                    "tokenizer's count (see output_tokens_source); null: unknown")
    output_tokens_source: Literal["usage", "tokenizer", "none"] = Field(
        description="where output_tokens came from: usage, tokenizer (the server sent no "
                    "usage), none (unknown)")
    finish_reason: str | None = Field(
        description="the last finish_reason the server sent (null: none)")
    clock: Literal["kernel", "userspace"] = Field(
        description="what timed this request: kernel receive stamps (SO_TIMESTAMPNS) on every "
                    "read, else the time Python read the bytes")
    clock_stepped: bool = Field(
        description="a realtime clock step during the request was caught: its times are the "
                    "read times, not kernel stamps")
    generated_text: str = Field(description="the generated content (vLLM's generated_texts)")
    reasoning_text: str = Field(description="reasoning text (reasoning_content / reasoning)")
    tool_call_text: str = Field(description="tool-call names and arguments, as streamed")
    release_lag_ms: float | None = Field(
        None, description="due → release: how late the client released the request against "
                          "its seeded schedule (null, left out of the line: not paced)")
    ttft_from_schedule_ms: float | None = Field(
        None, description="the instant the schedule had the request due → first event "
                          "carrying generated text: ttft_ms + release_lag_ms + queue_ms "
                          "(null: an unpaced load, all released at once, or no text)")
    session: int | None = Field(
        None, description="the conversations dataset: the session this turn belongs to "
                          "(0-based; left out of the line otherwise)")
    turn: int | None = Field(
        None, description="the conversations dataset: the turn's position in its session "
                          "(0-based; its prompt holds every earlier turn and reply)")
    server_timings: dict[str, float] | None = Field(
        None, description="the server's own account of this request, where it sends one: the "
                          "last `timings` object of the stream (llama.cpp: prompt_n, "
                          "prompt_ms, predicted_n, predicted_ms, draft_n, draft_n_accepted …); "
                          "left out of the line when the server sent none")

    @classmethod
    def from_outcome(cls, o: RequestOutcome, chunk_tokens: list[float],
                     first_ns: int) -> RequestRecord:
        """The record of outcome ``o``; ``first_ns``: the send of the first request to end.

        Built without validation (:meth:`model_construct`): every value comes typed from the
        outcome, and this runs on the event loop while other streams are being read.
        """
        tpot = None
        if o.success and o.output_tokens > 1 and o.latency_ns is not None \
                and o.ttft_text_ns is not None:
            tpot = (o.latency_ns - o.ttft_text_ns) / (o.output_tokens - 1) / _MS
        return cls.model_construct(
            index=o.index, success=o.success, error=o.error, http_status=o.http_status,
            response_id=o.response_id,
            start_s=(o.start_ns - first_ns) / 1e9 if o.start_ns else None,
            queue_ms=o.queue_ns / _MS, ttft_ms=_ms(o.ttft_text_ns),
            ttft_lower_ms=_ms(o.ttft_text_lower_ns), ttft_exact=o.ttft_text_exact,
            ttft_first_choice_ms=_ms(o.ttft_ns), tpot_ms=tpot, e2el_ms=_ms(o.latency_ns),
            itl_ms=[g / _MS for g in o.itl_ns],
            itl_text_only_ms=[g / _MS for g, m in zip(o.text_gaps_ns, o.text_gap_measured,
                                                      strict=True) if m],
            coalesced_gaps=o.coalesced_gaps, chunk_tokens=chunk_tokens,
            prompt_len=o.prompt_len, server_prompt_tokens=o.server_prompt_tokens,
            output_tokens=o.output_tokens if o.output_tokens_source != "none" else None,
            output_tokens_source=o.output_tokens_source, finish_reason=o.finish_reason,
            clock=o.clock, clock_stepped=o.clock_stepped, generated_text=o.text,
            reasoning_text=o.reasoning, tool_call_text=o.tool_text,
            server_timings=o.server_timings, text_free=o.text_free,
            release_lag_ms=_ms(o.release_lag_ns) if o.paced else None,
            ttft_from_schedule_ms=_ms(o.ttft_from_schedule_ns), session=o.session,
            turn=o.turn)

    def to_json(self) -> dict[str, Any]:
        """The record as its JSON line's object: exactly its keys, in field order;
        ``server_timings`` only where the server sent some (other engines' lines keep their
        bytes); ``release_lag_ms`` and ``ttft_from_schedule_ms`` likewise only where known
        (a paced load), ``session`` and ``turn`` (a conversation's turn); ``text_free`` only
        where true."""
        out = self.model_dump()
        for key in ("release_lag_ms", "ttft_from_schedule_ms", "session", "turn",
                    "server_timings"):
            if out[key] is None:
                del out[key]
        if not out["text_free"]:
            del out["text_free"]
        return out


def requests_path(result_json: Path) -> Path:
    """``run.json`` → ``run.requests.jsonl``."""
    return result_json.with_name(result_json.stem + ".requests.jsonl")


def read_requests(path: Path) -> list[RequestRecord]:
    """The records of a ``.requests.jsonl`` file, in completion order, validated.

    A last line that is cut short (the run was killed while writing it) is dropped; a bad
    line anywhere else means the file is not one benchlib wrote, and raises ``ValueError``.
    """
    lines = path.read_bytes().split(b"\n")
    records: list[RequestRecord] = []
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            if n == len(lines) - 1:  # no newline after it: the write was cut off
                break
            raise ValueError(f"{path}:{n + 1}: not a JSON line") from None
        try:
            records.append(RequestRecord.model_validate(obj))
        except ValidationError as exc:
            raise ValueError(f"{path}:{n + 1}: not a request record: {exc}") from None
    return records


class RecordLog:
    """Whole lines appended with one ``os.write`` each: nothing waits in a user-space
    buffer, so a SIGKILL loses no finished line. ``secrets`` (the API key) are replaced by
    ``***`` before a line is written: a server may echo the key in an error message."""

    def __init__(self, path: Path, secrets: Sequence[str] = ()) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        self._secrets = list(secrets)

    def write(self, record: RequestRecord) -> None:
        line = scrub_text(json.dumps(record.to_json()), self._secrets) + "\n"
        data = memoryview(line.encode())
        while data:  # a regular file takes it in one call; loop for the pathological case
            data = data[os.write(self._fd, data):]

    def close(self) -> None:
        os.close(self._fd)
