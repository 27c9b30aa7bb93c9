"""The ``conversations`` dataset: multi-turn chat sessions, each turn sent with its history.

A conversation set is JSONL, one session per line: ``{"id": …, "turns": [user message, …]}``
(``benchlib/measure/data/conversations-synthetic.jsonl`` ships with the kit, written by
``tools/make_conversations.py`` from its corpus). A session sends its first user message;
when the reply has streamed, it appends the reply as the assistant's message, waits the think
time (``conversation_think_s``: the user reading and typing) and sends the next user message
with everything before it, as a chat client does. Sessions run side by side, at most
``max_concurrency`` at once (a session holds its slot for its whole life, as a user does);
``num_prompts`` takes the set's first sessions.

Every turn is one request with its own record (``session`` and ``turn`` on its line) and
counts in the result's metrics like any other. The result's ``conversations`` block adds what
the shape is for: the median TTFT per turn (a later turn's prompt repeats the earlier ones',
so an engine with a prefix cache should not answer it slower in proportion), and the prefix
cache's hit rate as the server reported it per response (llama.cpp's ``timings.cache_n`` of
``cache_n + prompt_n`` prompt tokens; vLLM reports it on /metrics only, which 03_measure
samples as ``prefix_cache_hit_rate``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchlib._exceptions import UsageError
from benchlib.measure.load._loadgen import LoadPlan, _headers, _one
from benchlib.measure.wire._connection import StreamCapture
from benchlib.measure.wire._decode import decode_capture
from benchlib.measure.wire._pool import ConnectionPool
from benchlib.measure.wire._request import API_PATHS, Prompt, RequestOutcome, build_body

__all__ = ["ConversationSummary", "Session", "TurnSummary", "read_sessions", "run_sessions",
           "summarize_conversations"]


class Session(BaseModel):
    """One line of a conversation set."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field("", description="the session's name")
    turns: list[str] = Field(min_length=1, description="the user's messages, in order")


def read_sessions(path: Path, num_sessions: int | None) -> list[Session]:
    """The set's first ``num_sessions`` sessions; a bad line stops with :class:`UsageError`
    naming ``--dataset-path`` and the line."""
    if not path.is_file():
        raise UsageError("--dataset-path", f"no such file: {path}")
    out: list[Session] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(Session.model_validate(json.loads(line)))
            except (ValueError, ValidationError) as exc:
                why = (exc.errors()[0]["msg"] if isinstance(exc, ValidationError)
                       else f"not JSON ({exc})")
                raise UsageError("--dataset-path", f"{path}:{lineno}: {why} (a conversation "
                                 'line: {"id": …, "turns": [user message, …]})') from None
            if num_sessions is not None and len(out) >= num_sessions:
                break
    if not out:
        raise UsageError("--dataset-path", f"{path} holds no sessions")
    return out


class TurnSummary(BaseModel):
    """The requests of one turn position across sessions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int = Field(description="0-based position in its session")
    requests: int = Field(description="successful requests at this turn")
    median_ttft_text_ms: float | None = Field(description="median of benchlib's TTFT (send → "
                                                          "first text)")
    median_prompt_tokens: float | None = Field(
        description="median prompt tokens, the history included (the server's usage where "
                    "sent, else the tokenizer's count)")
    prefix_cache_hit_rate: float | None = Field(
        description="Σ cache_n / Σ (cache_n + prompt_n) of the server's per-response timings "
                    "(llama.cpp; null: the server sent none)")


class ConversationSummary(BaseModel):
    """What a conversations run adds to its result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sessions: int = Field(description="sessions run")
    think_s: float = Field(description="seconds between a reply's end and the next turn")
    per_turn: list[TurnSummary] = Field(description="one entry per turn position")
    prefix_cache_hit_rate: float | None = Field(
        description="over every turn, as in per_turn (null: the server reported none per "
                    "response; see the measurement's /metrics prefix_cache_hit_rate)")


def _cache(o: RequestOutcome) -> tuple[float, float] | None:
    t = o.server_timings or {}
    if "cache_n" not in t or "prompt_n" not in t:
        return None
    return t["cache_n"], t["cache_n"] + t["prompt_n"]


def _hit_rate(outcomes: Sequence[RequestOutcome]) -> float | None:
    pairs = [c for o in outcomes if o.success and (c := _cache(o)) is not None]
    total = sum(q for _, q in pairs)
    return sum(h for h, _ in pairs) / total if pairs and total else None


def summarize_conversations(outcomes: Sequence[RequestOutcome], sessions: int,
                            think_s: float) -> ConversationSummary:
    """Per turn position: its requests' median TTFT and prompt length, and the cache's hits."""
    turns: dict[int, list[RequestOutcome]] = {}
    for o in outcomes:
        if o.turn is not None:
            turns.setdefault(o.turn, []).append(o)
    per_turn = []
    for turn in sorted(turns):
        ok = [o for o in turns[turn] if o.success]
        ttft = [o.ttft_text_ns / 1e6 for o in ok if o.ttft_text_ns is not None]
        prompt = [o.server_prompt_tokens if o.server_prompt_tokens is not None
                  else o.prompt_len for o in ok]
        per_turn.append(TurnSummary(
            turn=turn, requests=len(ok),
            median_ttft_text_ms=float(np.median(ttft)) if ttft else None,
            median_prompt_tokens=float(np.median(prompt)) if prompt else None,
            prefix_cache_hit_rate=_hit_rate(ok)))
    return ConversationSummary(sessions=sessions, think_s=think_s, per_turn=per_turn,
                               prefix_cache_hit_rate=_hit_rate(outcomes))


async def run_sessions(sessions: Sequence[Session], plan: LoadPlan, *, model: str,
                       output_len: int | None, ignore_eos: bool, sampling: dict[str, Any] | str,
                       think_s: float, count: Callable[[list[dict[str, str]]], int],
                       on_outcome: Callable[[RequestOutcome, StreamCapture], None]
                       ) -> tuple[list[RequestOutcome], int]:
    """Run every session (see the module's doc); ``count`` gives a history's prompt tokens.
    Returns the turns' outcomes (indexed in the order they were sent) and the duration from
    the start to the last reply's end, in ns."""
    endpoint = plan.endpoint()
    target = endpoint.path(API_PATHS["chat"])
    limit = plan.max_concurrency or len(sessions)
    pool = ConnectionPool(endpoint, max(1, min(limit, len(sessions))), plan.connect_timeout)
    await pool.open()
    sem = asyncio.Semaphore(limit)
    outcomes: list[RequestOutcome] = []
    sent = [0]

    async def session(s: int, turns: list[str]) -> None:
        history: list[dict[str, str]] = []
        async with sem:
            for t, text in enumerate(turns):
                history.append({"role": "user", "content": text})
                body = build_body(Prompt(list(history), count(history), output_len), "chat",
                                  model, ignore_eos=ignore_eos, sampling=sampling)
                index = sent[0]
                sent[0] += 1
                release = time.perf_counter_ns()
                capture = await _one(pool, target, _headers(endpoint, body, plan.api_key),
                                     body, plan.request_timeout)
                outcome = decode_capture(index, count(history), capture, "chat")
                outcome.release_ns = release
                outcome.session, outcome.turn = s, t
                outcomes.append(outcome)
                on_outcome(outcome, capture)
                if not outcome.success:
                    return  # the history would be missing a reply: the session ends here
                history.append({"role": "assistant", "content": outcome.text})
                if t + 1 < len(turns) and think_s > 0:
                    await asyncio.sleep(think_s)

    begin = time.perf_counter_ns()
    try:
        await asyncio.gather(*(session(k, s.turns) for k, s in enumerate(sessions)))
        end = time.perf_counter_ns()
    finally:
        pool.close()
    return sorted(outcomes, key=lambda o: o.index), end - begin
