"""The engine package of an open-jet wheel: read, checked against the wheel's RECORD, staged.

What: :func:`read_wheel` takes a ``.whl``, an unpacked wheel or a folder :func:`stage` made,
:func:`megakernel_files` picks the ``megakernel/`` package out of it (the CUDA engine's
sources, its ``Makefile`` and the HTTP server) with every file's sha256 checked against
``RECORD``, and :func:`stage` writes the wheel trimmed to that package and its
``dist-info`` (0.7 MB of 42 MB) with ``WHEEL.json`` naming the wheel and its sha256.

Why: ``tools/build_openjet.py`` builds from the wheel as PyPI serves it, and a device call
carries at most 64 MiB: the staged folder travels instead, and still says which wheel it
came from and that its files are that wheel's. Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PACKAGE", "BuildFailed", "megakernel_files", "read_wheel", "record_hashes",
           "stage"]

PACKAGE = "megakernel"


class BuildFailed(Exception):
    """A phase that did not produce what it should: its name, its output's last lines."""

    def __init__(self, phase: str, message: str, lines: Sequence[str] = ()) -> None:
        super().__init__(f"{phase}: {message}")
        self.phase, self.lines = phase, list(lines)


def record_hashes(record: str) -> dict[str, str]:
    """``RECORD``'s ``path,sha256=<urlsafe b64>,size`` lines → {path: hex sha256}."""
    out: dict[str, str] = {}
    for line in record.splitlines():
        path, _, rest = line.partition(",")
        digest = rest.partition(",")[0]
        if digest.startswith("sha256="):
            raw = base64.urlsafe_b64decode(digest[7:] + "=" * (-len(digest[7:]) % 4))
            out[path] = raw.hex()
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_wheel(source: Path) -> tuple[dict[str, bytes], str, str]:
    """Every wheel file (paths as ``RECORD`` names them): from a ``.whl`` or an unpacked
    wheel folder; plus the wheel's file name and its sha256 (a ``.whl``'s own; a staged
    folder's ``WHEEL.json``; else empty)."""
    if source.is_file():
        with zipfile.ZipFile(source) as whl:
            files = {n: whl.read(n) for n in whl.namelist() if not n.endswith("/")}
        return files, source.name, _sha256(source.read_bytes())
    if not source.is_dir():
        raise BuildFailed("source", f"{source} is neither a wheel nor a folder")
    files = {p.relative_to(source).as_posix(): p.read_bytes()
             for p in sorted(source.rglob("*")) if p.is_file() and p.name != "WHEEL.json"}
    staged = source / "WHEEL.json"
    meta = json.loads(staged.read_text()) if staged.is_file() else {}
    return files, str(meta.get("wheel", source.name)), str(meta.get("sha256", ""))


def megakernel_files(files: dict[str, bytes]) -> tuple[str, dict[str, bytes], dict[str, str]]:
    """The open-jet version, the ``megakernel/`` package's files (relative to it) and the
    wheel's ``RECORD`` hashes, each file checked against its hash."""
    dist = sorted(n for n in files if re.fullmatch(r"open_jet-[^/]+\.dist-info/METADATA", n))
    if not dist:
        raise BuildFailed("source", "no open_jet-*.dist-info/METADATA: not an open-jet wheel")
    meta = files[dist[0]].decode()
    version = re.search(r"^Version: (\S+)$", meta, re.M)
    record = files.get(dist[0].replace("METADATA", "RECORD"))
    if version is None or record is None:
        raise BuildFailed("source", f"{dist[0]} has no Version, or the wheel no RECORD")
    hashes = record_hashes(record.decode())
    prefix = f"open_jet-{version[1]}.data/purelib/{PACKAGE}/"
    package = {n[len(prefix):]: data for n, data in files.items() if n.startswith(prefix)}
    if "Makefile" not in package or "server/mk_server.py" not in package:
        raise BuildFailed("source", f"the wheel has no {prefix}Makefile or server/mk_server.py")
    for rel, data in package.items():
        if hashes.get(prefix + rel) != _sha256(data):
            raise BuildFailed("source", f"{prefix}{rel} does not match the wheel's RECORD")
    return version[1], package, hashes


def stage(source: Path, dest: Path) -> Path:
    """``dest``: the wheel trimmed to its ``dist-info`` and the engine package (0.7 MB of
    42 MB, what a device call can carry), with ``WHEEL.json`` naming the wheel and its
    sha256; ``--wheel dest`` builds from it."""
    files, wheel, sha = read_wheel(source)
    version, package, _ = megakernel_files(files)
    keep = {n: d for n, d in files.items()
            if n.startswith(f"open_jet-{version}.dist-info/")
            or n.startswith(f"open_jet-{version}.data/purelib/{PACKAGE}/")}
    shutil.rmtree(dest, ignore_errors=True)
    for name, data in keep.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)
    (dest / "WHEEL.json").write_text(json.dumps({"wheel": wheel, "sha256": sha}) + "\n")
    print(f"build_openjet: open-jet {version}: {len(package)} engine files staged in {dest}",
          file=sys.stderr, flush=True)
    return dest
