"""The ``benchlib`` entry point: what its process imports. Every command pays its imports, and
``make test`` starts the command a hundred times."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchlib.cli import SKIPPED_IMPORTS

REPO = Path(__file__).resolve().parents[3]


def _imported(*args: str) -> dict[str, int]:
    """``python -X importtime`` of a benchlib command: each module it imported (or tried
    to) → the microseconds its import took, its own imports included."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "benchlib", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split("|") for line in done.stderr.splitlines()
            if line.startswith("import time:") and "imported package" not in line]
    return {row[2].strip(): int(row[1]) for row in rows if len(row) == 3}


def test_a_check_imports_jsonschema_without_its_slow_optional_formats() -> None:
    took = _imported("run", "params/demo.yaml", "--check")
    # jsonschema is imported (nbformat needs it) and asks for these: they answer at once,
    # as not installed, and nothing of theirs is loaded
    assert "jsonschema" in took
    for name in SKIPPED_IMPORTS:
        assert took.get(name, 0) < 1000, took.get(name)
        assert not [m for m in took if m.startswith(f"{name}.")]


def test_the_skipped_imports_are_installed_here_so_skipping_them_matters() -> None:
    import importlib.util

    assert all(importlib.util.find_spec(name) for name in SKIPPED_IMPORTS)
