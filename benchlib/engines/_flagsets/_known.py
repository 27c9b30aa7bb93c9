"""Known differences: flags that changed name or meaning between an engine's versions, or
that belong to another engine, with what to write instead. The check cites them when such a
flag is refused, so "not a flag" comes with "renamed --spec-draft-n-max in 2026 builds".

Each engine's table is its adapter's (:attr:`benchlib.adapters.EngineAdapter.
flag_differences`); this is the view by engine kind. Each entry names the flags that replace
it, so a test can hold the table to the real flag sets (the replacements exist, the old flag
does not, or is a removed stub).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from benchlib.adapters import ADAPTERS, FlagDifferences

__all__ = ["KNOWN_DIFFERENCES"]

#: engine → flag → (the flags that replace it, what to write instead)
KNOWN_DIFFERENCES: Mapping[str, FlagDifferences] = MappingProxyType(
    {name: a.flag_differences for name, a in ADAPTERS.items() if a.flag_differences})
