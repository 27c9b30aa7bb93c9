"""What a streamed chunk's delta carries besides content: the reasoning text, which the
``openai`` SDK's typed delta does not declare (engines send it as ``reasoning`` or
``reasoning_content``)."""

from __future__ import annotations

from typing import Any

__all__ = ["reasoning_text"]


def _field(obj: Any, name: str) -> str:
    """A field the typed delta may not declare: as attribute or as a model extra."""
    value = getattr(obj, name, None)
    if value is None:
        value = (getattr(obj, "model_extra", None) or {}).get(name)
    return value if isinstance(value, str) else ""


def reasoning_text(delta: Any) -> str:
    """The delta's reasoning text (``reasoning``, else ``reasoning_content``); ``""`` if none."""
    return _field(delta, "reasoning") or _field(delta, "reasoning_content")
