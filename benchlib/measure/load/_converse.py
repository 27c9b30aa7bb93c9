"""A conversations run's load (:mod:`benchlib.measure.load._conversations`): the warmups, then the
sessions, with what :func:`benchlib.measure.measure` passes every load."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib._exceptions import UsageError
from benchlib.measure.load._conversations import read_sessions, run_sessions
from benchlib.measure.load._loadgen import LoadPlan, run_coroutine, run_load
from benchlib.measure.wire._connection import StreamCapture
from benchlib.measure.wire._request import RequestOutcome
from benchlib.measure.workload._config import MeasureConfig
from benchlib.measure.workload._datasets import _count
from benchlib.measure.workload._trace import read_trace

__all__ = ["converse", "planned_requests"]


def planned_requests(dataset: str, path: Path | None, num_prompts: int) -> int:
    """Requests a measurement of ``num_prompts`` sends: a trace's lines (at most that many),
    a conversation set's turns (of that many sessions), otherwise ``num_prompts``."""
    if dataset == "trace" and path is not None:
        return len(read_trace(path, num_prompts))
    if dataset == "conversations" and path is not None:
        return sum(len(s.turns) for s in read_sessions(path, num_prompts))
    return num_prompts


def converse(cfg: MeasureConfig, plan: LoadPlan, tokenizer: Any | None, warmups: list[bytes],
             on_outcome: Callable[[RequestOutcome, StreamCapture], None],
             on_warmed: Callable[[], None] | None) -> tuple[list[RequestOutcome], int]:
    """Send the warmups (left out of everything), call ``on_warmed``, run the sessions."""
    if cfg.endpoint != "chat":
        raise UsageError("--endpoint", "the conversations dataset sends chat messages: use "
                         "--endpoint chat")
    if not math.isinf(cfg.request_rate):
        raise UsageError("--request-rate", "a conversation's next turn follows its reply "
                         "and the think time, not a rate: leave the rate unset")
    assert cfg.dataset_path is not None
    sessions = read_sessions(cfg.dataset_path, cfg.dataset_skip + cfg.num_prompts)[
        cfg.dataset_skip:]
    if warmups:
        run_coroutine(run_load(warmups, [0] * len(warmups), dataclasses.replace(
            plan, num_warmups=0, request_rate=math.inf), [], lambda o, c: None))
    if on_warmed is not None:
        on_warmed()
    counts: dict[str, int] = {}

    def count(history: list[dict[str, str]]) -> int:
        key = repr(history)
        if key not in counts:
            counts[key] = _count(tokenizer, history)
        return counts[key]

    return run_coroutine(run_sessions(
        sessions, plan, model=cfg.model, output_len=cfg.output_len, ignore_eos=cfg.ignore_eos,
        sampling=cfg.sampling if isinstance(cfg.sampling, str) else dict(cfg.sampling),
        think_s=cfg.conversation_think_s, count=count, on_outcome=on_outcome))
