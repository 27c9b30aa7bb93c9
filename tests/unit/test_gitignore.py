"""The folders every make target builds are ignored as folders *and* as links: a worktree
that links them (``ln -s ../main/.venv .venv``) must not commit the link, or a merge of that
commit replaces the built folder with it (git deletes ignored files to check out tracked
ones: it happened once, and cost a rebuild)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILT = [".venv", ".engines", ".models", ".cache", ".device"]


@pytest.mark.parametrize("name", BUILT)
def test_built_folders_are_ignored_as_links_too(name: str, tmp_path: Path) -> None:
    git = shutil.which("git")
    assert git is not None
    subprocess.run([git, "init", "-q", str(tmp_path)], check=True)
    shutil.copy(REPO / ".gitignore", tmp_path / ".gitignore")
    (tmp_path / name).symlink_to(REPO / name)
    probe = subprocess.run([git, "check-ignore", "-q", name], cwd=tmp_path, check=False)
    assert probe.returncode == 0, f"{name} as a link is not ignored: no trailing / in " \
                                  ".gitignore"
