"""Helpers every command shares: turning validation errors into flag-named messages."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["flag_name", "validation_message"]


def flag_name(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as the flag or key path a user typed."""
    return "--" + str(loc[0]).replace("_", "-") if loc else "input"


def validation_message(exc: ValidationError) -> str:
    """All of a validation error's problems on one line, each naming its flag."""
    lines = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{flag_name(err['loc'])}: {msg}" if err["loc"] else msg)
    return "; ".join(lines)
