"""What the table-printing benchmarks share: print a Markdown table and its summary, and keep
the rows as ``benchmarks/results/<name>-<UTC time>.json`` when asked (``--save``)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

RESULTS = Path(__file__).resolve().parent / "results"


def save_flag(description: str) -> bool:
    """Parse the one flag these benchmarks take: whether to write the results JSON too."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--save", action="store_true", help="write the results JSON too")
    return bool(ap.parse_args().save)


def publish(name: str, table: str, summary: str, rows: Sequence[BaseModel], save: bool) -> None:
    """Print ``table`` and ``summary``; with ``save``, write ``rows`` as JSON beside the other
    benchmark results and say where."""
    print(table)
    print()
    print(summary)
    if save:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        out = RESULTS / f"{name}-{stamp}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps([r.model_dump(mode="json") for r in rows], indent=2) + "\n")
        print(f"results: {out}")
