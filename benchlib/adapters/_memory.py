"""An engine's own memory report beside the plan: what each engine kind contributes to
02_launch's plan-against-engine comparison (:mod:`benchlib.pipeline.steps._engine_vs_plan`).

The comparison plans the variant's engine again with that engine's settings and sets the
figures it reported beside the plan's. Which settings change the plan (vLLM's
``--kv-cache-dtype``, llama.cpp's ``-ctk`` and slots …) and which figures the engine reports
(its log lines, its ``/metrics``) are the engine's business: each adapter answers
:meth:`~benchlib.adapters.EngineAdapter.memory_settings` and
:meth:`~benchlib.adapters.EngineAdapter.memory_rows` from a :class:`MemoryInputs`, and returns
:class:`ReportRow` tuples the comparison turns into flagged figures.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from benchlib.adapters._speculative import Speculative

__all__ = ["GIB", "MemoryInputs", "ReportRow", "flag_value", "label_int", "number"]

GIB = 1024**3


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True)
class MemoryInputs:
    """What the comparison knows of the variant's engine."""

    #: ``engine.args``, as strings
    args: tuple[str, ...] = ()
    #: ``engine.env``
    env: Mapping[str, str] = field(default_factory=_empty)
    #: ``engine.version``
    version: str | None = None
    speculative: Speculative = field(default_factory=Speculative)
    #: ``engine.parallel``'s tensor-parallel size (None: not given)
    tp: int | None = None
    #: vLLM's ``vllm:cache_config_info`` labels from ``/metrics`` (empty: none)
    cache_config: Mapping[str, str] = field(default_factory=_empty)
    #: the engine's log, for figures a log line carries
    log_text: str = ""


class ReportRow(NamedTuple):
    """One figure: the plan's value, the engine's, where the engine's came from, and the KV
    budget a part of the overhead is flagged by (None: flagged by its own size)."""

    figure: str
    plan: float | None
    engine: float | None
    source: str
    budget: float | None = None


def number(value: Any) -> float | None:
    """A number as a float, or None (text, a bool, missing)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def flag_value(args: tuple[str, ...], *flags: str) -> str | None:
    """The value after the last of ``flags`` in ``args`` (``--flag value`` or
    ``--flag=value``), or None."""
    found = None
    for a, b in itertools.pairwise([*args, ""]):
        for f in flags:
            if a == f:
                found = b
            elif a.startswith(f + "="):
                found = a[len(f) + 1:]
    return found


def label_int(labels: Mapping[str, str], key: str) -> int | None:
    """An integer label of ``/metrics`` (``num_gpu_blocks``), or None."""
    value = labels.get(key)
    return int(value) if value is not None and value.isdigit() else None
