"""The steps of a run, one module each. A module that declares ``STEP`` (a
:class:`~benchlib.pipeline._declare.Step`) is a step; adding one is that module plus its
notebook (``python tools/make_notebooks.py`` writes it)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from benchlib.pipeline._declare import Step

__all__ = ["step_table"]


def step_table() -> dict[str, Step[Any]]:
    """Every declared step by name, in order (the name starts with its number)."""
    found: list[Step[Any]] = []
    for info in pkgutil.iter_modules(__path__):
        step = getattr(importlib.import_module(f"{__name__}.{info.name}"), "STEP", None)
        if isinstance(step, Step):
            found.append(step)
    return {s.name: s for s in sorted(found, key=lambda s: s.name)}
