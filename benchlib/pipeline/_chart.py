"""A figure a notebook shows and a run folder keeps."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Chart"]


class Chart:
    """A matplotlib figure that notebooks show as a PNG (no pyplot, no global state)."""

    def __init__(self, figure: Figure) -> None:
        self.figure = figure

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=100)
        return buf.getvalue()

    def save(self, path: str | Path) -> Path:
        """Write the PNG (for people who would rather look than read JSON)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(self._repr_png_())
        return out
