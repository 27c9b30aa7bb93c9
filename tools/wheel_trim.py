"""A wheel less some of its files, reproducibly, with a record of what went and why.

Why: ``sglang-kernel`` 0.4.4 is a 587 MiB wheel (1.8 GB unpacked) of which one Hopper GPU
serving with Triton attention loads about 40 MB; the rest (FlashAttention-3's library, the
Blackwell build) would be twelve more device calls. The trimmed wheel keeps the original's
name and version (SGLang pins ``sglang-kernel==0.4.4``); its RECORD drops the removed files'
rows; every kept file is checked against the original RECORD's sha256 as it is copied, so
nothing but the removal differs. The source wheel itself is pinned by the lock's hash.

The record (committed, e.g. ``tools/sglang-kernel-0.4.4-hopper.trim.json``) names the source
wheel and its sha256, each removed file with its size, sha256 and reason, and the kept
files' count and bytes.
"""

from __future__ import annotations

import base64
import csv
import fnmatch
import hashlib
import io
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class TrimError(ValueError):
    """A wheel that cannot be trimmed as asked (named in the message)."""


def _record(zf: zipfile.ZipFile) -> tuple[str, dict[str, tuple[str, str]]]:
    """The RECORD's name and ``path → (hash, size)`` rows."""
    name = next((n for n in zf.namelist() if n.endswith(".dist-info/RECORD")), None)
    if name is None:
        raise TrimError(f"{zf.filename}: no .dist-info/RECORD")
    rows = csv.reader(io.StringIO(zf.read(name).decode("utf-8")))
    return name, {r[0]: (r[1], r[2]) for r in rows if r}


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode()


def trim(wheel: Path, remove: Mapping[str, str], out: Path,
         source_sha256: str | None = None) -> dict[str, Any]:
    """Write ``out``: ``wheel`` less the files matching ``remove``'s patterns (pattern →
    reason); returns the record. ``source_sha256``: refuse a wheel that is not that one. A
    pattern that matches nothing, or a kept file whose bytes differ from its RECORD row, is
    an error naming it."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if source_sha256 is not None and digest != source_sha256:
        raise TrimError(f"{wheel.name}: sha256 {digest[:12]}… is not {source_sha256[:12]}…")
    removed: list[dict[str, Any]] = []
    kept_bytes = kept = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(partial, "w") as dst:
        record_name, rows = _record(src)
        used = dict.fromkeys(remove, False)
        kept_rows = []
        for info in src.infolist():
            reason = next((why for pat, why in remove.items()
                           if fnmatch.fnmatchcase(info.filename, pat)), None)
            if reason is not None:
                for pat in remove:
                    used[pat] = used[pat] or fnmatch.fnmatchcase(info.filename, pat)
                hashed, _ = rows.get(info.filename, ("", ""))
                removed.append({"path": info.filename, "bytes": info.file_size,
                                "sha256": hashed, "why": reason})
                continue
            if info.filename == record_name:
                continue
            data = src.read(info)
            row = rows.get(info.filename)
            if row is None or row[0] != _digest(data):
                raise TrimError(f"{wheel.name}: {info.filename} does not match its RECORD row")
            kept_rows.append([info.filename, row[0], row[1]])
            kept += 1
            kept_bytes += len(data)
            dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)
        if unused := [p for p, hit in used.items() if not hit]:
            raise TrimError(f"{wheel.name}: removal patterns matched nothing: {unused}")
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows([*kept_rows, [record_name, "", ""]])
        dst.writestr(src.getinfo(record_name), text.getvalue(),
                     compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)
    partial.replace(out)
    return {"source": wheel.name, "source_sha256": digest, "removed": removed,
            "kept_files": kept, "kept_bytes": kept_bytes,
            "removed_bytes": sum(r["bytes"] for r in removed),
            "trimmed_bytes": out.stat().st_size}


def write_record(record: Mapping[str, Any], path: Path) -> None:
    path.write_text(json.dumps(record, indent=1) + "\n")


def check(trimmed: Path, record: Mapping[str, Any]) -> None:
    """The trimmed wheel is the record's: none of the removed files, the kept count, and
    every kept file matching its RECORD row (the original's hashes)."""
    with zipfile.ZipFile(trimmed) as zf:
        record_name, rows = _record(zf)
        names = [n for n in zf.namelist() if n != record_name]
        gone = {r["path"] for r in record["removed"]}
        if back := gone & set(names):
            raise TrimError(f"{trimmed.name}: removed files are back: {sorted(back)}")
        if len(names) != record["kept_files"]:
            raise TrimError(f"{trimmed.name}: {len(names)} files, the record says "
                            f"{record['kept_files']}")
        for name in names:
            if name not in rows or rows[name][0] != _digest(zf.read(name)):
                raise TrimError(f"{trimmed.name}: {name} does not match its RECORD row")
