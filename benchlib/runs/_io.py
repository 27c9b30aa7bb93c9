"""A step's results file: written by its notebook as the results accrue (atomically, so a
later failure or a kill keeps what was saved), read back typed
(:meth:`benchlib.runs.RunFolder.result`), or as plain JSON by the runner for the sidecar."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, JsonValue

__all__ = ["read_results", "save_results", "synthetic_results", "whole", "write_atomic"]

M = TypeVar("M", bound=BaseModel)


def save_results(results_path: str | Path, results: BaseModel, *,
                 exclude_unset: bool = False) -> None:
    """Write ``results`` to ``results_path`` now; an empty path saves nothing (a notebook
    run on its own without a run folder). ``exclude_unset``: only the keys that were given
    (a record read back and written again keeps its keys, none added)."""
    if not results_path:
        return
    data = results.model_dump(mode="json", exclude_unset=exclude_unset)
    path = Path(results_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2, default=str, allow_nan=False) + "\n")


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all: into a hidden file
    beside it, flushed to disk, then renamed over it, so a crash or a kill never leaves half
    a file and a reader sees the old one or the new one."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def read_results(results_path: str | Path) -> dict[str, JsonValue]:
    """The saved results as JSON data, ``{}`` when none were saved: the runner copies any
    step's into its sidecar as they are (typed reading: ``RunFolder.result``)."""
    path = Path(results_path)
    if results_path and path.is_file():
        data: dict[str, JsonValue] = json.loads(path.read_text(encoding="utf-8"))
        return data
    return {}


def synthetic_results(results: dict[str, JsonValue]) -> bool | None:
    """Whether a step's results hold a measurement answered by benchlib's scripted server
    (a result's ``synthetic``: canned timings, no engine); None when it measured nothing."""
    flags = [r["synthetic"] for r in results.values()
             if isinstance(r, dict) and isinstance(r.get("synthetic"), bool)]
    return any(flags) if flags else None


def whole(model: M) -> M:
    """``model`` with every field counted as given: results are saved with only the keys
    given (a record read back keeps its own), and a fresh record keeps all of its."""
    return type(model).model_validate(model.model_dump())
