"""No module of benchlib over 350 lines (issue 38): one that grows past it is split by what it
does."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "benchlib"
LIMIT = 350


def test_no_module_is_over_the_limit() -> None:
    long = {p.relative_to(ROOT.parent).as_posix(): n for p in sorted(ROOT.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > LIMIT}
    assert not long, long
