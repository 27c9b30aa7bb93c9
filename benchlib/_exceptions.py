"""One exception hierarchy for the whole kit, and the one place low-level errors become it.

Every error that a user can cause or meet derives from :class:`BenchlibError`, so the command
line can turn any of them into a one-line message and an exit code instead of a traceback
(see ``docs/architecture.md`` for where each layer raises them).

Every exception class of the kit is defined here, and only here (a test holds it); the
modules that raise them import them from here. Our exception hierarchy, with the exit code
of ``benchlib`` when one escapes a command::

    BenchlibError ............. 1  base class: an error benchlib raises on purpose
    ├── UsageError ............ 2  bad input (a flag, a recipe key, a file), named
    │   └── RecipeError ....... 2  a recipe that cannot be used (benchlib.recipe)
    ├── MeasureError .......... 1  a measurement without one successful request
    └── EngineError ........... 1  the engine exited or never became ready (benchlib.engines)

Outside the hierarchy, each caught where it is raised and never raised to a caller::

    Hangup .................... -  the scripted server leaves a connection (benchlib.scripted)
    FlagSourceError ........... -  an engine's flag set could not be read: its flags are
                                   reported unchecked (benchlib.engines)
    AmbiguousFlag ............. -  a flag abbreviation matches several flags: reported as
                                   the flag's problem (benchlib.engines)
    BadScrapeStatus ........... -  a /metrics scrape answered, not 200: a recorded fault
                                   (benchlib.measure)
    Malformed ................. -  a file that looks like a known format but cannot be
                                   read: a UsageError naming the file (benchlib.importers)

A Ctrl-C (``KeyboardInterrupt``) exits with 130. Pydantic's ``ValidationError`` never
escapes: :func:`validation_problems` and :func:`validation_message` turn it into the key
paths or flags a user typed, for a :class:`UsageError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic is not imported at ``import benchlib``
    from pydantic import ValidationError

__all__ = ["AmbiguousFlag", "BadScrapeStatus", "BenchlibError", "EngineError",
           "FlagSourceError", "Hangup", "Malformed", "MeasureError", "RecipeError",
           "UsageError", "format_problems", "validation_message", "validation_problems"]


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


class EngineError(BenchlibError):
    """The engine exited or did not become ready; carries the tail of its log and hints."""

    def __init__(self, message: str, log_tail: str = "", hints: Sequence[str] = ()) -> None:
        self.log_tail = log_tail
        self.hints = list(hints)
        text = message
        if hints:
            text += "\n" + "\n".join(f"hint: {h}" for h in hints)
        if log_tail:
            text += f"\n--- engine log (tail) ---\n{log_tail}"
        super().__init__(text)


def format_problems(problems: list[tuple[str, str]]) -> str:
    """One ``key: message`` line per problem, indented under the recipe's name."""
    return "\n".join(f"  {key}: {msg}" for key, msg in problems)


class RecipeError(UsageError):
    """A recipe that cannot be used; ``problems`` lists ``(key path, message)`` pairs."""

    def __init__(self, path: Path, problems: list[tuple[str, str]]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(str(path), format_problems(problems))


class Hangup(Exception):
    """The scripted server leaves the connection now, without finishing the response
    (``reset``: with an RST)."""

    def __init__(self, reset: bool) -> None:
        super().__init__("reset" if reset else "close")
        self.reset = reset


class FlagSourceError(RuntimeError):
    """An engine's flag set could not be obtained (the message says why); the check then
    reports the flags as unchecked instead of failing the launch."""


class AmbiguousFlag(Exception):
    """A flag abbreviation that matches several of the engine's flags."""

    def __init__(self, key: str, matches: list[str]) -> None:
        super().__init__(f"{key} is ambiguous here: {', '.join(matches[:6])}")


class BadScrapeStatus(Exception):
    """The server answered a /metrics scrape, but not with 200."""


class Malformed(ValueError):
    """Input that looks like a known format but cannot be read; the importers' dispatcher
    turns it into a :class:`UsageError` naming the file (it never reaches a caller)."""


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def validation_problems(exc: ValidationError, *, flags: bool | Mapping[str, str] = False,
                        prefix: str = "") -> list[tuple[str, str]]:
    """Each problem of a pydantic ``ValidationError`` as ``(where, message)``.

    ``where`` is the key path the user wrote (``scenarios[0].input_len``, after ``prefix``
    such as ``"plan."``), or with ``flags`` the command-line flag of the field: the mapping's
    (field → flag) where ``flags`` is one and names the field, else ``--max-model-len`` for
    ``max_model_len``. It is ``""`` for a problem of the whole input (a model validator's,
    which names its fields itself). Pydantic's union tags (``function-after[…]``) are left
    out of the path, its ``"Value error, "`` prefix out of the message, and a key the model
    forbids reads "unknown key (misspelt?)".
    """
    problems = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key (misspelt?)"
        if flags is not False:
            named = flags if isinstance(flags, Mapping) else {}
            field = str(loc[0]) if loc else ""
            where = named.get(field, "--" + field.replace("_", "-")) if loc else ""
        else:
            where = prefix + _key_path(loc) if loc else ""
        problems.append((where, msg))
    return problems


def validation_message(exc: ValidationError, *, flags: bool | Mapping[str, str] = False,
                       prefix: str = "") -> str:
    """All of :func:`validation_problems` on one line (``where: message; …``)."""
    return "; ".join(f"{where}: {msg}" if where else msg
                     for where, msg in validation_problems(exc, flags=flags, prefix=prefix))
