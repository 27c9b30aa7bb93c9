"""A step's results file: written by its notebook as the results accrue (atomically, so a
later failure or a kill keeps what was saved), read back by the runner for the sidecar."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = ["read_results", "save_results"]


def save_results(results_path: str | Path, results: BaseModel | dict[str, Any]) -> None:
    """Write ``results`` to ``results_path`` now; an empty path saves nothing (a notebook
    run on its own without a run folder)."""
    if not results_path:
        return
    data = results.model_dump(mode="json") if isinstance(results, BaseModel) else results
    path = Path(results_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str, allow_nan=False) + "\n",
                   encoding="utf-8")
    tmp.replace(path)


def read_results(results_path: str | Path) -> dict[str, Any]:
    """The saved results as JSON data, ``{}`` when none were saved."""
    path = Path(results_path)
    if results_path and path.is_file():
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    return {}
