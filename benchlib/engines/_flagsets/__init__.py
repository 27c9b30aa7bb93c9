"""Engines' flag sets: every option string an engine's own parser accepts, and where to get
the set for a recipe's engine (:func:`engine_flag_set`).

A :class:`FlagSet` lists an engine version's options (each with its spellings, whether it
takes a value, its choices where they are fixed, and whether it is deprecated or removed) and
how that parser reads a command line (argparse's rules, or llama.cpp's);
:mod:`benchlib.engines._flags` checks a recipe's flags against it. Where a set comes from:

* vLLM, and SGLang when ``engine.python`` has it installed: the real parser, built in a
  subprocess of the engine's interpreter (:mod:`._introspect`), cached by distribution and
  version in ``.engines/flags/`` (ignored by git), so only the first check waits for it;
* SGLang and open-jet otherwise: the JSON files beside this module, extracted from the
  released wheels by ``tools/engine_flags.py`` (committed, one per version);
* vLLM without ``engine.python``, or with one that is not on this machine (a GPU host's
  bundle): the pinned release's own parser, run once from its wheel by
  ``tools/vllm_flags.py`` (committed beside them: the versions the seeds pin);
* llama.cpp: ``llama-server --help`` of the binary (:mod:`._llamacpp`), cached by its hash.

:data:`KNOWN_DIFFERENCES` (:mod:`._known`) says what a refused flag became in other versions.
"""

from __future__ import annotations

from pathlib import Path

from benchlib.adapters import EngineAdapter, adapter
from benchlib.engines._flagsets._introspect import (
    SGLANG_PARSER,
    VLLM_PARSER,
    argparse_flags,
    installed_version,
    parser_flags,
)
from benchlib.engines._flagsets._known import KNOWN_DIFFERENCES
from benchlib.engines._flagsets._llamacpp import llamacpp_flags, parse_llamacpp_help
from benchlib.engines._flagsets._model import (
    DATA_DIR,
    FlagOption,
    FlagSet,
    FlagSourceError,
    cache_dir,
    committed,
    committed_versions,
)
from benchlib.recipe import EngineSpec

__all__ = ["DATA_DIR", "KNOWN_DIFFERENCES", "SGLANG_PARSER", "VLLM_PARSER", "FlagOption", "FlagSet",
           "FlagSourceError", "argparse_flags", "cache_dir", "committed", "committed_versions",
           "engine_flag_set", "installed_version", "llamacpp_flags", "parse_llamacpp_help",
           "parser_flags"]

_MEMO: dict[tuple[object, ...], tuple[FlagSet | None, str]] = {}


def engine_flag_set(engine: EngineSpec, cache: Path | None = None
                    ) -> tuple[FlagSet | None, str]:
    """``engine``'s flag set and where it came from, or ``None`` and why there is none.

    A set found is remembered for the life of the process (a recipe's variants share it),
    except llama.cpp's: its binary is hashed each time (milliseconds), so a rebuild counts.
    """
    cache = cache or cache_dir()
    key = (engine.kind, engine.python, engine.executable, engine.version,
           tuple(sorted(engine.env.items())), cache)
    if key in _MEMO:
        return _MEMO[key]
    try:
        found = _find_flag_set(engine, cache)
    except FlagSourceError as exc:
        return None, str(exc)
    if found[0] is not None and adapter(engine.kind).flag_source != "help":
        _MEMO[key] = found
    return found


def _committed_release(engine: EngineAdapter, version: str | None
                       ) -> tuple[FlagSet | None, str]:
    """A release's committed set (its adapter's ``flag_tool``: its own parser, run from its
    wheel), for a recipe that pins the version and names no interpreter."""
    have = ", ".join(committed_versions(engine.name)) or "none"
    if version is None:
        return None, (f"{engine.name} without engine.python or engine.version (committed "
                      f"sets: {have})")
    release = committed(engine.name, version)
    if release is None:
        return None, (f"no flag set for {engine.name} {version} without engine.python "
                      f"(committed: {have}; add one with "
                      f"{engine.flag_tool.format(version=version)})")
    return release, release.source


def _find_flag_set(engine: EngineSpec, cache: Path) -> tuple[FlagSet | None, str]:
    kind, env = adapter(engine.kind), dict(engine.env)
    source = kind.flag_source
    if source == "none":
        return None, kind.no_flag_set
    if source == "parser" and engine.python is not None and Path(engine.python).exists():
        flags, cached = parser_flags(engine.python, kind, env, cache)
        return flags, flags.source + (" (cached)" if cached else "")
    if source == "help":
        if engine.executable is None:
            return None, kind.no_flag_set
        flags, cached = llamacpp_flags(engine.executable, env, cache, engine=kind.name)
        return flags, flags.source + (" (cached)" if cached else "")
    if source == "parser":  # no interpreter here: the pinned release's committed set
        release, said = _committed_release(kind, engine.version)
        if engine.python is not None:  # another machine's (a GPU host's bundle)
            said += f" ({engine.python} is not on this machine)"
        return release, said
    dist = kind.distributions[0]
    version, why = engine.version, ""
    if engine.python is not None:
        try:
            version = installed_version(engine.python, (dist,), env)[1]
        except FlagSourceError as exc:
            why = f" ({exc})"
    if source == "parser-or-committed" and engine.python is not None and not why and version:
        try:
            read, cached = parser_flags(engine.python, kind, env, cache, (dist, version))
        except FlagSourceError:
            pass  # a broken environment: the release's committed set will do
        else:
            return read, read.source + (" (cached)" if cached else "")
    if version is None:
        return None, f"{kind.name} without engine.version{why}"
    release = committed(kind.name, version)
    if release is None:
        have = ", ".join(committed_versions(kind.name)) or "none"
        return None, (f"no flag set for {dist} {version} (committed: {have}; add one with "
                      f"{kind.flag_tool.format(version=version)})")
    return release, release.source
