"""Where a run under test wrote its folder: the date folder of its start, UTC.

A run folder is named by the day its run started (``OUT/YYYY-MM-DD/NAME``), so a test that
computes today's date after the run reads the wrong folder when the run crossed midnight UTC
(the CI of 2026-12-05 did). Tests ask here instead: the newest date folder under ``OUT``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

__all__ = ["run_day"]


def run_day(out: Path) -> Path:
    """The newest ``YYYY-MM-DD`` folder under ``out``; today's (UTC) when there is none yet."""
    days = sorted(p for p in out.glob("[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]")
                  if p.is_dir())
    return days[-1] if days else out / dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
