"""Open-file limit: one socket per in-flight stream needs one file descriptor each.

Many systems start processes with a soft ``RLIMIT_NOFILE`` of 1024, which a run of 1,024
concurrent streams exceeds (add the tokenizer's files, the log, the event loop's own). The
soft limit may be raised up to the hard limit without privileges, so the client and the
scripted server raise it as far as a run needs, never lower it, and never touch the hard
limit. Where even the hard limit is too low, connections fail with a named error ("Too many
open files … the open-file limit is N") instead of a traceback.
"""

from __future__ import annotations

from types import ModuleType

resource: ModuleType | None
try:  # imported now: once descriptors run out, an import (a file to open) would fail too
    import resource
except ImportError:  # not POSIX
    resource = None

__all__ = ["open_file_limit", "raise_open_file_limit"]

#: descriptors a process needs besides its sockets (stdio, logs, tokenizer, event loop)
HEADROOM = 64


def open_file_limit() -> int | None:
    """The current soft ``RLIMIT_NOFILE``, or ``None`` where there is no such limit."""
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def raise_open_file_limit(sockets: int) -> int | None:
    """Raise the soft open-file limit so ``sockets`` sockets fit (plus :data:`HEADROOM`).

    Never lowers it and never exceeds the hard limit. Returns the soft limit in force
    afterwards (``None``: unlimited or not POSIX).
    """
    if resource is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = sockets + HEADROOM
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return None if soft == resource.RLIM_INFINITY else int(soft)
    new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if new > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (ValueError, OSError):
            return int(soft)
        return int(new)
    return int(soft)
