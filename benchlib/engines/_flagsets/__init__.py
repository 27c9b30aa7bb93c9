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
* vLLM without ``engine.python``: the pinned release's own parser, run once from its wheel
  by ``tools/vllm_flags.py`` (committed beside them: the versions the seeds pin);
* llama.cpp: ``llama-server --help`` of the binary (:mod:`._llamacpp`), cached by its hash.

:data:`KNOWN_DIFFERENCES` (:mod:`._known`) says what a refused flag became in other versions.
"""

from __future__ import annotations

from pathlib import Path

from benchlib.engines._flagsets._introspect import (
    SGLANG_PARSER,
    VLLM_PARSER,
    argparse_flags,
    installed_version,
    vllm_flags,
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
           "vllm_flags"]

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
    if found[0] is not None and engine.kind != "llamacpp":
        _MEMO[key] = found
    return found


def _committed_vllm(version: str | None) -> tuple[FlagSet | None, str]:
    """A vLLM release's committed set (``tools/vllm_flags.py``: its own parser, run from its
    wheel), for a recipe that pins the version and names no interpreter."""
    have = ", ".join(committed_versions("vllm")) or "none"
    if version is None:
        return None, f"vllm without engine.python or engine.version (committed sets: {have})"
    release = committed("vllm", version)
    if release is None:
        return None, (f"no flag set for vllm {version} without engine.python (committed: "
                      f"{have}; add one with tools/vllm_flags.py {version})")
    return release, release.source


def _find_flag_set(engine: EngineSpec, cache: Path) -> tuple[FlagSet | None, str]:
    kind, env = engine.kind, dict(engine.env)
    if kind == "endpoint":
        return None, "an endpoint: the kit starts nothing"
    if kind == "vllm" and engine.python is not None:
        flags, cached = vllm_flags(engine.python, env, cache)
        return flags, flags.source + (" (cached)" if cached else "")
    if kind == "llamacpp":
        if engine.executable is None:
            return None, "llama-cpp-python's server; give engine.executable (llama-server)"
        flags, cached = llamacpp_flags(engine.executable, env, cache)
        return flags, flags.source + (" (cached)" if cached else "")
    if kind == "vllm":  # no interpreter: the pinned release's committed set
        return _committed_vllm(engine.version)
    if kind not in ("sglang", "openjet"):
        return None, f"{kind} without engine.python"
    dist = "sglang" if kind == "sglang" else "open-jet"
    version, why = engine.version, ""
    if engine.python is not None:
        try:
            version = installed_version(engine.python, (dist,), env)[1]
        except FlagSourceError as exc:
            why = f" ({exc})"
    if kind == "sglang" and engine.python is not None and not why and version:
        path = cache / f"sglang-{version}.json"
        if (stored := FlagSet.read_cached(path)) is not None:
            return stored, f"sglang {version}'s own parser (cached)"
        try:
            read = argparse_flags(engine.python, SGLANG_PARSER, env, engine=kind,
                                  version=version, source=f"sglang {version}'s own parser")
        except FlagSourceError:
            pass  # a broken environment: the release's committed set will do
        else:
            read.write(path)
            return read, read.source
    if version is None:
        return None, f"{kind} without engine.version{why}"
    release = committed(kind, version)
    if release is None:
        have = ", ".join(committed_versions(kind)) or "none"
        return None, (f"no flag set for {dist} {version} (committed: {have}; add one with "
                      f"tools/engine_flags.py {kind} {version})")
    return release, release.source
