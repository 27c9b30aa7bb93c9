"""The report reads the steps' results by field: a field renamed in a result model fails
mypy in the report (the old dict reads silently gave None)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
#: a measurement field the report reads, and the model that declares it
FIELD = "median_tpot_ms"
MODEL = Path("benchlib") / "runs" / "_measure.py"


def _mypy(root: Path) -> subprocess.CompletedProcess[str]:
    """mypy, as `make lint` runs it, on the report package of the copy at ``root``."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
         "--cache-dir", str(root / ".mypy_cache"), "-p", "benchlib.report"],
        cwd=root, capture_output=True, text=True, check=False, timeout=600)


def test_a_renamed_result_field_fails_mypy_in_the_report(tmp_path: Path) -> None:
    shutil.copytree(REPO / "benchlib", tmp_path / "benchlib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    clean = _mypy(tmp_path)
    assert clean.returncode == 0, clean.stdout  # the copy as it is passes
    model = tmp_path / MODEL
    text = model.read_text(encoding="utf-8")
    declared = f"    {FIELD}: float | None = Field("
    assert text.count(declared) == 1
    model.write_text(text.replace(declared, f"    {FIELD}_renamed: float | None = Field("),
                     encoding="utf-8")
    broken = _mypy(tmp_path)
    assert broken.returncode == 1, broken.stdout
    assert re.search(rf"^benchlib/report/_\w+\.py:\d+: error: .*\b{FIELD}\b", broken.stdout,
                     re.MULTILINE), broken.stdout
