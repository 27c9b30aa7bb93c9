"""An engine environment held to its lock file: the exact versions a recipe says the engine
was installed from (``engine.lock``) against what the engine's interpreter has installed.

What: :func:`read_lock` reads a lock in pip's requirements format — ``name==version`` lines
as pip-compile, rye (``requirements.lock``), uv's ``pip compile`` or ``pip freeze`` write
them, with their ``--hash`` options, ``\\`` continuations, comments and environment markers,
and the kit's own bundle locks (``tools/*.lock``: ``name==version sha256``). Only exact pins
(``==``, ``===``) are held; any other line (a range, a URL, an editable) is listed as not
checked. :func:`check_lock` asks the engine's interpreter for its installed distributions
and its marker environment (one subprocess, standard library only, so any Python 3 engine
environment answers) and returns a :class:`LockCheck`: every pin that matches, every one
that differs or is missing, and the lock's hash.

Why: a write-up's numbers come from one set of versions (seed 003: vLLM 0.27.1 as syv.ai's
recipe locked it). A run on another torch or another kernel package is another
configuration, and a reader should see that on the run's own record, beside the machine's
differences, not find it in a pip log. A lock line the kit cannot read is the recipe's
fault and is named with its line (exit 2) before anything starts.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

from packaging.markers import InvalidMarker, Marker, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, Specifier
from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from benchlib._exceptions import UsageError

__all__ = ["LockCheck", "LockDifference", "LockPin", "check_lock", "lock_mismatch",
           "lock_summary", "read_lock"]

#: the kit's own bundle locks put a bare sha256 after the pin
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: what the engine's interpreter prints: its distributions and its marker environment
_PROBE = """\
import importlib.metadata as m, json, os, platform, sys
dists = {}
for d in m.distributions():
    name = d.metadata["Name"]
    if name:
        dists[name] = d.version
impl = sys.implementation
v = impl.version
iver = f"{v.major}.{v.minor}.{v.micro}" + ("" if v.releaselevel == "final"
                                           else f"{v.releaselevel[0]}{v.serial}")
env = {"implementation_name": impl.name, "implementation_version": iver,
       "os_name": os.name, "platform_machine": platform.machine(),
       "platform_release": platform.release(), "platform_system": platform.system(),
       "platform_version": platform.version(),
       "python_full_version": platform.python_version(),
       "platform_python_implementation": platform.python_implementation(),
       "python_version": ".".join(platform.python_version_tuple()[:2]),
       "sys_platform": sys.platform}
print(json.dumps({"dists": dists, "env": env}))
"""


class LockPin(BaseModel):
    """One exact pin of a lock file."""

    name: str = Field(description="the distribution, as the lock spells it")
    operator: str = Field("==", description="== (PEP 440: a local label such as +cpu is "
                          "not compared, as pip does) or === (the string itself)")
    version: str = Field(description="the pinned version")
    marker: str | None = Field(None, description="the line's environment marker, if any")


class LockDifference(BaseModel):
    """A pin the engine's environment does not hold."""

    name: str
    locked: str = Field(description="the lock's version")
    installed: str | None = Field(description="the environment's version; None: missing")


class LockCheck(BaseModel):
    """The engine's environment held to ``engine.lock`` at a run's start."""

    path: str = Field(description="the lock file, as the recipe names it")
    sha256: str | None = Field(None, description="the lock file's hash; None: not read")
    pins: int = Field(0, description="exact pins that apply to the engine's environment")
    matched: int = Field(0, description="pins the environment holds at that version")
    differs: list[LockDifference] = Field(default_factory=list)
    not_checked: list[str] = Field(default_factory=list, description="lines that pin no "
                                   "exact version (a range, a URL, an editable install)")
    error: str | None = Field(None, description="why the environment was not compared")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Each requirement line with the number of its first physical line: comments dropped,
    ``\\`` continuations joined."""
    out: list[tuple[int, str]] = []
    held: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not held:
            start = number
        if line.endswith("\\"):
            held.append(line[:-1])
            continue
        joined = " ".join([*held, line]).strip()
        held = []
        if joined:
            out.append((start, joined))
    if held and " ".join(held).strip():
        out.append((start, " ".join(held).strip()))
    return out


def _requirement(line: str) -> Requirement | None:
    """The line's requirement, without pip's options (``--hash=…``) or the kit's digest;
    None for a line that is only an option (``--index-url …``, ``-e …``)."""
    if line.startswith("-"):
        return None
    words = line.split()
    while words and (words[-1].startswith("--") or _DIGEST.fullmatch(words[-1])):
        words.pop()
    return Requirement(" ".join(words))


def read_lock(path: Path) -> tuple[list[LockPin], list[str]]:
    """The exact pins of the lock at ``path`` and the lines that pin nothing exactly;
    :class:`~benchlib.UsageError` (``engine.lock``) for a file that is not there or a line
    that is not a requirement."""
    return _parse(_read(path), path)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError("engine.lock", f"{path}: cannot be read ({exc})") from None


def _parse(data: bytes, path: Path) -> tuple[list[LockPin], list[str]]:
    """:func:`read_lock` on the file's bytes (read once: its hash is taken from them too)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError("engine.lock", f"{path}: cannot be read ({exc})") from None
    pins: list[LockPin] = []
    loose: list[str] = []
    for number, line in _logical_lines(text):
        try:
            req = _requirement(line)
        except InvalidRequirement as exc:
            raise UsageError("engine.lock", f"{path}, line {number}: not a requirement "
                             f"({exc}); a lock holds name==version lines") from None
        if req is None:
            continue
        specs = list(req.specifier)
        if req.url is None and len(specs) == 1 and specs[0].operator in ("==", "===") \
                and "*" not in specs[0].version:
            pins.append(LockPin(name=req.name, operator=specs[0].operator,
                                version=specs[0].version,
                                marker=str(req.marker) if req.marker else None))
        else:
            loose.append(line)
    if not pins:
        raise UsageError("engine.lock", f"{path}: no name==version line; a lock pins exact "
                         "versions")
    return pins, loose


def lock_summary(path: Path) -> str:
    """``benchlib run --check``'s line for a lock: read as a run will read it (raising the
    same :class:`~benchlib.UsageError`), without an engine environment to hold it to."""
    pins, loose = read_lock(path)
    rest = f"; {len(loose)} lines pin no exact version, not checked" if loose else ""
    return (f"engine.lock: {path}: {len(pins)} exact pin{'s' * (len(pins) != 1)}, held at "
            f"the run's start{rest}")


def _installed(python: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The distributions installed in ``python``'s environment (canonical name → version)
    and its marker environment."""
    done = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True,
                          timeout=120, check=True)
    answer = json.loads(done.stdout)
    return ({canonicalize_name(k): v for k, v in answer["dists"].items()}, answer["env"])


def _applies(pin: LockPin, env: dict[str, str]) -> bool:
    if pin.marker is None:
        return True
    try:
        return Marker(pin.marker).evaluate(environment=env)
    except (InvalidMarker, UndefinedEnvironmentName):
        return True  # a marker the kit cannot weigh: the pin is held


def _holds(pin: LockPin, installed: str | None) -> bool:
    """Whether ``installed`` satisfies the pin as pip would."""
    if installed is None:
        return False
    try:
        return Specifier(f"{pin.operator}{pin.version}").contains(installed, prereleases=True)
    except InvalidSpecifier:
        return installed == pin.version


def check_lock(lock: Path, python: Path, *, shown: str | None = None) -> LockCheck:
    """``python``'s environment held to the lock at ``lock`` (``shown``: how the record
    names the file; the path as given by default). An unreadable lock raises
    :class:`~benchlib.UsageError`; an interpreter that does not answer is recorded."""
    data = _read(lock)
    pins, loose = _parse(data, lock)
    base = LockCheck(path=shown or str(lock), sha256=hashlib.sha256(data).hexdigest(),
                     not_checked=loose)
    try:
        installed, env = _installed(python)
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
        return base.model_copy(update={"error": f"{python} did not list its packages: "
                                                f"{str(exc)[:200]}"})
    held = [p for p in pins if _applies(p, env)]
    found = {p.name: installed.get(canonicalize_name(p.name)) for p in held}
    differs = [LockDifference(name=p.name, locked=p.version, installed=found[p.name])
               for p in held if not _holds(p, found[p.name])]
    return base.model_copy(update={"pins": len(held), "matched": len(held) - len(differs),
                                   "differs": differs})


def lock_mismatch(check: LockCheck, shown: int = 5) -> str | None:
    """One line for the run's mismatches (beside the hardware's), None when the environment
    holds every pin."""
    if check.error is not None:
        return f"engine.lock {check.path}: not compared ({check.error})"
    if not check.differs:
        return None
    parts = [f"{d.name} {d.locked} locked, "
             + ("missing" if d.installed is None else f"{d.installed} installed")
             for d in check.differs[:shown]]
    more = len(check.differs) - shown
    return (f"engine environment differs from {check.path} on {len(check.differs)} of "
            f"{check.pins} pins: " + "; ".join(parts) + (f"; and {more} more" if more > 0
                                                         else ""))
