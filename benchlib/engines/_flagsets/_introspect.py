"""Flag sets read from an installed engine: its parser built in a subprocess of the engine's
own interpreter (nothing of the engine is imported into the kit) and dumped as JSON.

The subprocess builds the parser exactly as the engine's server entry point does (vLLM:
``make_arg_parser(FlexibleArgumentParser())`` of ``vllm.entrypoints.openai.api_server``;
SGLang: ``ServerArgs.add_cli_args`` after ``load_plugins()``, as ``sglang.launch_server``),
so plugins' and platform-specific options are in, and writes each action's spellings,
``nargs``, fixed string choices, metavar, whether it repeats and whether it is deprecated.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from benchlib.adapters import ADAPTERS, SGLANG_PARSER, VLLM_PARSER, EngineAdapter
from benchlib.engines._flagsets._model import FlagOption, FlagSet, FlagSourceError

__all__ = ["SGLANG_PARSER", "VLLM_PARSER", "argparse_flags", "installed_version",
           "parser_flags", "run_tool"]


def run_tool(argv: Sequence[str], env: Mapping[str, str], timeout: float,
             what: str = "") -> tuple[str, str]:
    """Run ``argv`` (an engine's interpreter or binary) in its own process group, killed
    whole on timeout; its stdout and stderr. A failure names the command and its exit
    status but never repeats its output: an engine may print its environment, secrets
    included."""
    what = what or " ".join([Path(argv[0]).name, *argv[1:2]])
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env={**os.environ, **env},
                                start_new_session=True, text=True, errors="replace")
    except OSError as exc:
        raise FlagSourceError(f"{argv[0]}: {exc.strerror or exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise FlagSourceError(f"{what} did not finish in {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise FlagSourceError(f"{what} exited with code {proc.returncode} (run it to see why)")
    return out, err


def installed_version(python: Path, dists: Iterable[str],
                      env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(distribution, version)`` of the first of ``dists`` installed for ``python`` (one
    quick subprocess: importlib.metadata, nothing of the engine imported)."""
    code = ("import importlib.metadata as m, sys\n"
            "for n in sys.argv[1:]:\n"
            "    try: print(n, m.version(n)); break\n"
            "    except m.PackageNotFoundError: pass\n")
    names = list(dists)
    out = run_tool([str(python), "-c", code, *names], env or {}, 60,
                   f"{python} (reading its {names[0]} version)")[0].split()
    if len(out) != 2:
        raise FlagSourceError(f"{python} has none of {', '.join(names)} installed")
    return out[0], out[1]


#: runs in the engine's interpreter (any Python ≥ 3.8): ``parser`` → the JSON our sets read
_DUMP = r"""
import argparse, json, sys
def _nargs(a):
    return a.nargs if a.nargs is None or isinstance(a.nargs, (int, str)) else None
def _choices(a):
    if a.choices is None or not all(c is None or isinstance(c, str) for c in a.choices):
        return None
    return sorted(str(c) for c in a.choices)
_deprecated = set(getattr(parser, "_deprecated", ()))
_repeat = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction,
           getattr(argparse, "_ExtendAction", argparse._AppendAction))
options = []
for a in parser._actions:
    if not a.option_strings or isinstance(a, argparse._HelpAction):
        continue
    dep = (a in _deprecated or getattr(a, "deprecated", False)
           or "deprecated" in type(a).__name__.lower()
           or (a.help or "").lstrip("(").lower().startswith("deprecated"))
    options.append({"flags": list(a.option_strings), "nargs": _nargs(a),
                    "choices": _choices(a),
                    "metavar": a.metavar if isinstance(a.metavar, str) else None,
                    "repeat": isinstance(a, _repeat),
                    "deprecated": " ".join((a.help or "deprecated").split())[:300]
                    if dep else None})
with open(sys.argv[1], "w") as f:
    json.dump({"allow_abbrev": parser.allow_abbrev, "options": options}, f)
"""

def argparse_flags(python: Path, builder: str, env: Mapping[str, str], *, engine: str,
                   version: str, source: str, timeout: float = 600,
                   flexible: bool | None = None) -> FlagSet:
    """Build a parser with ``builder`` (Python that leaves it in ``parser``) in a subprocess
    of ``python`` and read back its options: the engine's own parser, not a copy of it.
    ``flexible``: it takes vLLM's FlexibleArgumentParser spellings (default: as ``engine``'s
    adapter says)."""
    with tempfile.TemporaryDirectory(prefix="benchlib-flags-") as tmp:
        out = Path(tmp) / "flags.json"
        run_tool([str(python), "-c", builder + _DUMP, str(out)], env, timeout,
                 f"{python} building {engine}'s parser")
        data = json.loads(out.read_text(encoding="utf-8"))
    options = tuple(FlagOption.from_json(o) for o in data["options"])
    if flexible is None:
        flexible = engine in ADAPTERS and ADAPTERS[engine].flexible_flags
    attached = {"-O": "--optimization-level"} if flexible and any(
        "--optimization-level" in o.flags for o in options) else {}
    return FlagSet(engine, version, source, options, "argparse", bool(data["allow_abbrev"]),
                   underscores=flexible, dotted=flexible, attached=attached)


def parser_flags(python: Path, engine: EngineAdapter, env: Mapping[str, str], cache: Path,
                 installed: tuple[str, str] | None = None) -> tuple[FlagSet, bool]:
    """``engine``'s serve flags for the installation of ``python`` (its adapter's parser):
    from the cache when this distribution and version (``installed``, else read) were read
    before, else from its parser (then cached). Returns the set and whether it came from the
    cache."""
    dist, version = installed or installed_version(python, engine.distributions, env)
    path = cache / f"{dist}-{version}.json"
    if (cached := FlagSet.read_cached(path)) is not None:
        return cached, True
    flags = argparse_flags(python, engine.flag_parser, env, engine=engine.name,
                           version=version, flexible=engine.flexible_flags,
                           source=f"{dist} {version}'s own parser{engine.flag_parser_note}")
    flags.write(path)
    return flags, False
