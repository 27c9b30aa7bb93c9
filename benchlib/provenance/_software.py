"""The software a number came from: the kit's commit, Python, exact package versions, the
environment file's hash, and an engine environment's version."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path

__all__ = ["engine_version", "environment_hash", "git_state", "installed_packages",
           "python_version"]


def git_state(repo: Path) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git work tree at ``repo``, or ``(None, None)``."""
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True, timeout=10).stdout.strip()
        status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                 "--untracked-files=no"], check=True, capture_output=True,
                                text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit, bool(status.strip())


def python_version() -> str:
    return f"{platform.python_implementation()} {sys.version.split()[0]}"


def installed_packages() -> dict[str, str]:
    """Every distribution in this interpreter's environment, name → exact version."""
    out: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out[name.lower()] = dist.version
    return dict(sorted(out.items()))


def environment_hash(path: Path) -> str | None:
    try:
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def engine_version(python: Path | None, distributions: tuple[str, ...]) -> str | None:
    """The version of the first of ``distributions`` installed in ``python``'s environment."""
    if python is None or not Path(python).exists():
        return None
    code = ("import importlib.metadata as m, sys\n"
            "for d in sys.argv[1:]:\n"
            "    try: print(m.version(d)); break\n"
            "    except m.PackageNotFoundError: pass\n")
    try:
        out = subprocess.run([str(python), "-c", code, *distributions], capture_output=True,
                             text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out or None
