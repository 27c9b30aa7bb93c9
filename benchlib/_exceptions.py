"""One exception hierarchy for the whole kit.

Every error that a user can cause or meet derives from :class:`BenchlibError`, so the command
line can turn any of them into a one-line message and an exit code instead of a traceback.
"""

from __future__ import annotations

__all__ = ["BenchlibError", "MeasureError", "UsageError"]


class BenchlibError(Exception):
    """Base class of every error benchlib raises on purpose."""

    exit_code: int = 1


class UsageError(BenchlibError):
    """Bad input (a flag, a recipe key, a file): names the field and exits with code 2."""

    exit_code = 2

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class MeasureError(BenchlibError):
    """A measurement could not produce a single successful request."""
