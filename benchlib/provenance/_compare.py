"""Provenance side by side: the facts that decide whether two runs' numbers compare, one
row each, and which of them differ between the runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PROVENANCE_FACTS", "compare_provenance", "provenance_facts"]

#: row label → where it sits in a sidecar's ``provenance`` (keys and list indices)
PROVENANCE_FACTS: tuple[tuple[str, tuple[str | int, ...]], ...] = (
    ("kit commit", ("kit_commit",)), ("kit dirty", ("kit_dirty",)),
    ("engine", ("engine", "name")), ("engine version", ("engine", "version")),
    ("engine command", ("engine", "command")), ("model", ("model", "id")),
    ("model revision", ("model", "resolved_revision")),
    ("model files", ("model", "files_hash", "sha256")),
    ("model package", ("model", "origin", "package")),
    ("model package version", ("model", "origin", "version")),
    ("model wheel sha256", ("model", "origin", "wheel_sha256")),
    ("GPU", ("hardware", "gpus", 0, "name")), ("GPU count", ("hardware", "gpu_count")),
    ("driver", ("hardware", "driver_version")),
    ("power limit W", ("hardware", "gpus", 0, "power_limit_w")),
    ("CPU", ("hardware", "cpu", "model")), ("python", ("python",)),
    ("synthetic (scripted server)", ("synthetic",)),
)


def _dig(obj: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        try:
            obj = obj[part]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def provenance_facts(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The compared facts of one run (``None`` where its record lacks one)."""
    return {name: _dig(provenance, path) for name, path in PROVENANCE_FACTS}


def compare_provenance(runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One column per run (label → its sidecar's ``provenance``), one row per fact, and a
    ``differs`` column flagging the facts that are not the same in every run."""
    import pandas as pd

    table = pd.DataFrame({label: provenance_facts(p) for label, p in runs.items()})
    if not table.empty:
        table["differs"] = table.apply(lambda row: row.astype(str).nunique() > 1, axis=1)
    return table
