"""The ``trace`` dataset: replay a request trace in Mooncake's JSONL format.

One JSON object per line (Mooncake's ``FAST25-release/traces``; AIPerf and Dynamo read the
same): ``timestamp`` (ms after the trace's start: when the request arrives),
``input_length`` and ``output_length`` (tokens) and, optionally, ``hash_ids``: the prompt's
blocks of :data:`BLOCK_TOKENS` tokens, where two requests naming the same id share that
block's tokens (the trace's shared prefixes, what a prefix cache can reuse). Here each id
becomes a block of random token ids drawn from its own seed (``derive(seed, "trace-block",
id)``), the blocks are laid end to end and cut or topped up (random tokens from the
request's own seed) to ``input_length``, then made exact as the random dataset makes its
prompts (:mod:`benchlib.measure.workload._datasets`): equal ids give equal text.

The requests are released at the trace's times (relative to its first line's) multiplied by
``trace_time_scale`` (0.5 replays twice as fast), not at a drawn rate; the load's start is
the first request's time, as with a rate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchlib._exceptions import UsageError
from benchlib.measure.wire._request import Prompt
from benchlib.measure.workload._datasets import _exact_text
from benchlib.measure.workload._seeds import derive

__all__ = ["BLOCK_TOKENS", "TraceRow", "read_trace", "trace_offsets", "trace_prompts"]

#: tokens per hash id (Mooncake's block size)
BLOCK_TOKENS = 512


class TraceRow(BaseModel):
    """One line of a Mooncake trace."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    timestamp: float = Field(ge=0, description="arrival, ms after the trace's start")
    input_length: int = Field(ge=1, description="prompt tokens")
    output_length: int = Field(ge=1, description="tokens to generate")
    hash_ids: list[int] = Field(default_factory=list,
                                description="the prompt's blocks of 512 tokens; equal ids "
                                            "are equal blocks (shared prefixes)")


def read_trace(path: Path, num_prompts: int | None) -> list[TraceRow]:
    """The trace's first ``num_prompts`` lines (all: ``None``), in arrival order; a bad line
    stops with :class:`UsageError` naming ``--dataset-path``, the line and the field."""
    if not path.is_file():
        raise UsageError("--dataset-path", f"no such file: {path}")
    rows: list[TraceRow] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(TraceRow.model_validate(json.loads(line)))
            except ValueError as exc:
                what = (exc.errors()[0] if isinstance(exc, ValidationError) else None)
                field = ".".join(str(x) for x in what["loc"]) if what else ""
                why = what["msg"] if what else f"not JSON ({exc})"
                raise UsageError("--dataset-path",
                                 f"{path}:{lineno}: {field + ': ' if field else ''}{why} "
                                 "(a Mooncake trace line: timestamp, input_length, "
                                 "output_length, optional hash_ids)") from None
            if num_prompts is not None and len(rows) >= num_prompts:
                break
    if not rows:
        raise UsageError("--dataset-path", f"{path} holds no trace lines")
    return sorted(rows, key=lambda r: r.timestamp)  # stable: equal times keep file order


def trace_offsets(rows: list[TraceRow], scale: float) -> list[float]:
    """Each request's release in seconds after the load's start: its timestamp minus the
    first one's, times ``scale``."""
    first = rows[0].timestamp
    return [(r.timestamp - first) / 1000.0 * scale for r in rows]


def _pool(tokenizer: Any) -> np.ndarray:
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    return np.array([i for i in range(len(tokenizer)) if i not in special], dtype=np.int64)


def trace_prompts(tokenizer: Any, rows: list[TraceRow], *, seed: int,
                  block_tokens: int = BLOCK_TOKENS) -> list[Prompt]:
    """A prompt per trace row, its blocks shared where the trace's ``hash_ids`` are."""
    pool = _pool(tokenizer)
    blocks: dict[int, list[int]] = {}
    prompts = []
    for k, row in enumerate(rows):
        ids: list[int] = []
        for h in row.hash_ids:
            if h not in blocks:
                rng = np.random.default_rng(derive(seed, "trace-block", h))
                blocks[h] = [int(x) for x in rng.choice(pool, block_tokens)]
            ids += blocks[h]
        rng = np.random.default_rng(derive(seed, "trace-request", k))
        if len(ids) < row.input_length:
            ids += [int(x) for x in rng.choice(pool, row.input_length - len(ids))]
        ids = ids[:row.input_length]
        text = _exact_text(tokenizer, ids, row.input_length, pool, rng)
        prompts.append(Prompt(text, row.input_length, row.output_length))
    return prompts
