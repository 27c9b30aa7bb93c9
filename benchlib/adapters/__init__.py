"""One adapter per engine kind: everything the kit knows about an engine, in one place.

:func:`adapter` gives a kind's :class:`EngineAdapter` (its command line, readiness path,
parallel and speculative flags, ``/metrics`` names, the memory facts the plan needs and its
own memory report beside the plan (:mod:`._memory`), the
distributions that give its version, its known flag differences); :data:`ADAPTERS` is the
registry the recipe's ``engine.kind`` choices come from. :class:`Speculative` (the recipe's
speculative setting) lives here because adapters turn it into flags; the recipe re-exports it.
"""

from benchlib.adapters._base import (
    CrashHint,
    EngineAdapter,
    FlagDifferences,
    FlagSourceKind,
    LaunchInputs,
    ParallelSizes,
    PlanComparison,
    slots,
)
from benchlib.adapters._memory import MemoryInputs, ReportRow
from benchlib.adapters._registry import (
    ADAPTERS,
    ENGINE_KINDS,
    PLANNED_KINDS,
    SPECULATIVE_FLAGS,
    EngineKind,
    adapter,
)
from benchlib.adapters._sglang import SGLANG_PARSER
from benchlib.adapters._speculative import METHODS, SpecMethod, Speculative
from benchlib.adapters._vllm import VLLM_PARSER

__all__ = [
    "ADAPTERS",
    "ENGINE_KINDS",
    "METHODS",
    "PLANNED_KINDS",
    "SGLANG_PARSER",
    "SPECULATIVE_FLAGS",
    "VLLM_PARSER",
    "CrashHint",
    "EngineAdapter",
    "EngineKind",
    "FlagDifferences",
    "FlagSourceKind",
    "LaunchInputs",
    "MemoryInputs",
    "ParallelSizes",
    "PlanComparison",
    "ReportRow",
    "SpecMethod",
    "Speculative",
    "adapter",
    "slots",
]
