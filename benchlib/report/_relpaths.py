"""No machine's absolute paths in a report: a path under the run folder, the kit, the
temporary folder or the home folder is written relative to the run folder, so the page reads
the same on any machine the folder is moved to (and names no user's home or scratch space).
A deep path of another machine (a GPU host's engine and model files, recorded there) keeps its
last three parts after an ellipsis (``…/llamacpp/bin/llama-server``): what it was, not where.
System paths (``/usr``, ``/bin``, ``/opt`` …) and short ones (URL paths such as
``/v1/chat/completions``) are left alone.

Figures' ``data:`` URIs are left as they are (base64 carries slashes)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["relative_paths"]

#: where a path names the software, not the machine's layout
_SYSTEM = ("/usr/", "/bin/", "/sbin/", "/lib", "/opt/", "/etc/", "/dev/", "/proc/", "/sys/")
#: a path of more parts than this, outside every root and the system, is another machine's
_DEEP = 3

#: an absolute path: a slash not inside a word, a URL or a base64 run, then path characters
_ABS = re.compile(r"(?<![\w:/+.=\-~])/[\w.@+~\-]+(?:/[\w.@+~\-]*)*")
_DATA_URI = re.compile(r"data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]+")


def _roots(run_dir: Path, extra: Sequence[Path]) -> list[str]:
    roots = {str(p.resolve()) for p in (run_dir, *extra, Path(tempfile.gettempdir()),
                                        Path.home())}
    roots |= {str(p) for p in (run_dir, *extra)}
    # the longest first, so a path is taken relative by its nearest root's rule
    return sorted((r.rstrip("/") for r in roots if r not in ("", "/")), key=len, reverse=True)


def relative_paths(text: str, run_dir: Path, extra_roots: Sequence[Path] = ()) -> str:
    """``text`` with every absolute path under one of the roots (``run_dir``, ``extra_roots``
    such as the kit, the temporary folder, the home folder) rewritten relative to
    ``run_dir``; other absolute paths (``/usr/bin/…``, URL paths) and data URIs untouched."""
    roots = _roots(run_dir, extra_roots)
    base = str(run_dir.resolve())

    def fix(match: re.Match[str]) -> str:
        path = match.group(0)
        if any(path == r or path.startswith(r + "/") for r in roots):
            return os.path.relpath(path, base)
        parts = [p for p in path.split("/") if p]
        if len(parts) > _DEEP and not path.startswith(_SYSTEM):
            return "…/" + "/".join(parts[-_DEEP:])
        return path

    out: list[str] = []
    pos = 0
    for data in _DATA_URI.finditer(text):
        out.append(_ABS.sub(fix, text[pos:data.start()]))
        out.append(data.group(0))
        pos = data.end()
    out.append(_ABS.sub(fix, text[pos:]))
    return "".join(out)
