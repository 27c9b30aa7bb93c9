"""A figure a notebook shows and a run folder keeps."""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["Chart"]


class Chart:
    """A matplotlib figure that notebooks show as a PNG (no pyplot, no global state)."""

    def __init__(self, figure: Figure) -> None:
        self.figure = figure

    @classmethod
    def finish(cls, figure: Figure, axes: Iterable[Axes], save_to: str | Path = "") -> Chart:
        """The kit's look on every panel (a light grid, a small legend), saved as PNG when
        ``save_to`` names a file."""
        for ax in axes:
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        chart = cls(figure)
        if save_to:
            chart.save(save_to)
        return chart

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
