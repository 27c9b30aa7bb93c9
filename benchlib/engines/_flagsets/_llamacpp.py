"""llama.cpp's flags from ``llama-server --help``: the lines ``common_arg::to_string`` prints
(common/arg.cpp): spellings from column 0, comma separated, the first padded to 7 columns,
then the value hint(s) after one space, then the help from column 40 (or on the next line,
indented 40). An option without a hint takes no value; llama.cpp reads ``--foo_bar`` as
``--foo-bar``, takes no ``--flag=value`` and takes the next word as a value whatever it is.
Stubs of removed flags stay in the help, saying "the argument has been removed. use …".
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

from benchlib.engines._flagsets._introspect import run_tool
from benchlib.engines._flagsets._model import LLAMACPP_STYLE, FlagOption, FlagSet, FlagSourceError

__all__ = ["build_version", "llamacpp_flags", "parse_llamacpp_help"]

#: an option line: spellings at column 0, comma separated (the first padded to 7 columns),
#: then the value hint(s) after one space, then the help from column 40 (or the next line)
_OPTION_LINE = re.compile(r"^(-[^\s,]+(?:,\s+-[^\s,]+)*)(.*)$")
_UPPER = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _hint_and_help(rest: str) -> tuple[str, str]:
    if rest.startswith(" ") and not rest.startswith("  "):
        hint, _, help_text = rest[1:].partition("  ")
        return hint.strip(), help_text.strip()
    return "", rest.strip()


def parse_llamacpp_help(text: str) -> list[FlagOption]:
    """The options of a llama.cpp tool's ``--help``: spellings, one value or none (two when
    the line shows two upper-case hints, as ``FNAME SCALE``), the value hint, and the
    stubs that only say "the argument has been removed" (they fail when given)."""
    options: list[FlagOption] = []
    pending: tuple[list[str], str, list[str]] | None = None

    def close() -> None:
        if pending is None:
            return
        flags, hint, help_lines = pending
        help_text = " ".join(" ".join(line for line in help_lines
                                      if not line.startswith("(env: ")).split())
        hints = hint.split()
        nargs: int | None = 0 if not hints else (
            2 if len(hints) == 2 and all(_UPPER.match(h) for h in hints) else None)
        removed = help_text if help_text.startswith("the argument has been removed") else None
        deprecated = help_text if not removed and re.search(
            r"\bdeprecated\b", help_text, re.IGNORECASE) else None
        options.append(FlagOption(tuple(flags), nargs, None, hint or None,
                                  flags[0] == "--spec-type", deprecated, removed))

    for line in text.splitlines():
        match = _OPTION_LINE.match(line)
        if line.startswith("---") or (match is None and not line.startswith(" ")):
            close()
            pending = None
        elif match is not None:
            close()
            hint, help_text = _hint_and_help(match.group(2))
            pending = ([f.strip() for f in match.group(1).split(",")], hint,
                       [help_text] if help_text else [])
        elif pending is not None and line.strip():
            pending[2].append(line.strip())
    close()
    return options


def build_version(text: str) -> str:
    """``b7000 (abc1234)`` from ``--version``'s ``version: 7000 (abc1234)`` (2025 builds) or
    ``version: 0.5.0-dev (build 11312, commit 0c1e570)`` (2026 builds)."""
    found = re.search(r"version:\s*(\S+)(?:\s+\(([^)]*)\))?", text)
    if found is None:
        return "unknown"
    head, detail = found.group(1), found.group(2) or ""
    build = re.search(r"build (\d+)", detail)
    commit = re.search(r"commit (\w+)", detail)
    if head.isdigit():
        return f"b{head}" + (f" ({detail})" if re.fullmatch(r"\w+", detail) else "")
    if build:
        return f"b{build.group(1)}" + (f" ({commit.group(1)})" if commit else "")
    return head


def llamacpp_flags(executable: Path, env: Mapping[str, str], cache: Path, *, engine: str
                   ) -> tuple[FlagSet, bool]:
    """``llama-server``'s flags from its ``--help``, cached by the binary's SHA-256 (a
    rebuilt binary is read again), as ``engine``'s (the kind) flag set. Returns the set and
    whether it came from the cache."""
    if not executable.is_file():
        raise FlagSourceError(f"{executable} does not exist (not built yet?)")
    digest = hashlib.sha256(executable.read_bytes()).hexdigest()
    path = cache / f"llamacpp-{digest[:16]}.json"
    if (cached := FlagSet.read_cached(path)) is not None:
        return cached, True
    # the help is printf'd to stdout; a build that logs it goes to stderr: read both
    options = parse_llamacpp_help("\n".join(run_tool([str(executable), "--help"], env, 60)))
    if not any("--port" in o.flags for o in options):
        raise FlagSourceError(f"{executable} --help lists no --port: not llama-server's help")
    version = "unknown"
    with contextlib.suppress(FlagSourceError):
        version = build_version("\n".join(run_tool([str(executable), "--version"], env, 60)))
    flags = FlagSet(engine, version, f"{executable.name} --help (sha256 {digest[:12]})",
                    tuple(options), LLAMACPP_STYLE, underscores=True)
    flags.write(path)
    return flags, False
