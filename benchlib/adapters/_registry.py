"""The engine kinds: one vocabulary (:data:`EngineKind`, the recipe's ``engine.kind``
choices), one adapter each (:data:`ADAPTERS`), checked against each other at import.

Adding an engine: its module beside this one, its name in :data:`EngineKind`, its adapter
in :data:`ADAPTERS`. Every other package asks :func:`adapter` (a test holds the kind names
out of the rest of benchlib: ``tests/unit/adapters/test_kind_literals.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, get_args

from benchlib._exceptions import UsageError
from benchlib.adapters._base import EngineAdapter
from benchlib.adapters._endpoint import ENDPOINT
from benchlib.adapters._llamacpp import LLAMACPP
from benchlib.adapters._openjet import OPENJET
from benchlib.adapters._scripted import SCRIPTED
from benchlib.adapters._sglang import SGLANG
from benchlib.adapters._vllm import VLLM

__all__ = ["ADAPTERS", "ENGINE_KINDS", "PLANNED_KINDS", "SPECULATIVE_FLAGS", "EngineKind",
           "adapter"]

EngineKind = Literal["vllm", "sglang", "llamacpp", "openjet", "endpoint", "scripted"]

#: every engine kind's adapter, in the order of :data:`EngineKind`
ADAPTERS: Mapping[str, EngineAdapter] = MappingProxyType(
    {a.name: a for a in (VLLM, SGLANG, LLAMACPP, OPENJET, ENDPOINT, SCRIPTED)})
assert tuple(ADAPTERS) == get_args(EngineKind), "one adapter per EngineKind, in its order"

#: the kinds, in order: the recipe's and the command line's choices
ENGINE_KINDS: tuple[str, ...] = tuple(ADAPTERS)
#: the kinds whose memory the plan models (the first is ``benchlib plan``'s default)
PLANNED_KINDS: tuple[str, ...] = (VLLM.name, SGLANG.name)
#: every engine's speculative flags: in ``engine.args`` beside ``speculative`` they would
#: fight the kit's own
SPECULATIVE_FLAGS: frozenset[str] = frozenset().union(
    *(a.speculative_flags for a in ADAPTERS.values()))


def adapter(kind: str) -> EngineAdapter:
    """The adapter of ``kind``; an unknown kind is a usage error naming ``engine.kind``."""
    try:
        return ADAPTERS[kind]
    except KeyError:
        raise UsageError("engine.kind", f"{kind!r} is not an engine kind (one of "
                         f"{', '.join(ADAPTERS)})") from None
