"""A model folder's identity: a content hash over its files.

Files up to 64 MiB are hashed whole; larger ones (weight shards) by size plus their first and
last MiB, which identifies a checkpoint without reading hundreds of GB. The method is
recorded with the hash.
"""

from __future__ import annotations

import glob
import hashlib
import re
from pathlib import Path

from pydantic import BaseModel

__all__ = ["FilesHash", "gguf_shards", "hash_model_folder"]

_WHOLE = 64 * 2**20
_EDGE = 2**20


class FilesHash(BaseModel):
    sha256: str
    files: int
    total_bytes: int
    method: str = "whole files ≤ 64 MiB; larger: size + first and last MiB"


#: a split GGUF's shard: ``name-00001-of-00003.gguf``
_SHARD = re.compile(r"^(?P<stem>.+)-(?P<i>\d{5})-of-(?P<n>\d{5})\.gguf$")


def gguf_shards(path: Path) -> list[Path]:
    """A GGUF file and, when it is the first shard of a split model, its sibling shards."""
    m = _SHARD.match(path.name)
    if m is None:
        return [path]
    return sorted(path.parent.glob(f"{glob.escape(m['stem'])}-*-of-{m['n']}.gguf"))


def hash_model_folder(folder: Path) -> FilesHash:
    """Hash every file under ``folder`` (hidden files and folders skipped), in sorted order;
    a GGUF file instead: that file (with its shards)."""
    digest = hashlib.sha256()
    count = total = 0
    files = (gguf_shards(folder) if folder.is_file()
             else sorted(p for p in folder.rglob("*") if p.is_file()))
    base = folder.parent if folder.is_file() else folder
    for path in files:
        rel = path.relative_to(base)
        if any(part.startswith(".") for part in rel.parts):
            continue
        size = path.stat().st_size
        digest.update(f"{rel.as_posix()}\0{size}\0".encode())
        with path.open("rb") as fh:
            if size <= _WHOLE:
                for block in iter(lambda: fh.read(2**20), b""):
                    digest.update(block)
            else:
                digest.update(fh.read(_EDGE))
                fh.seek(size - _EDGE)
                digest.update(fh.read(_EDGE))
        count += 1
        total += size
    return FilesHash(sha256=digest.hexdigest(), files=count, total_bytes=total)
