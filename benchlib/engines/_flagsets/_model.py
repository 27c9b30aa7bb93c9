"""The shape of a flag set (:class:`FlagSet`, one :class:`FlagOption` per option), its JSON
form (committed files beside this module, caches in ``.engines/flags/``) and where they live.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchlib._exceptions import FlagSourceError

__all__ = ["DATA_DIR", "SCHEMA", "FlagOption", "FlagSet", "FlagSourceError", "Style",
           "cache_dir", "committed", "committed_versions"]

SCHEMA = 1
#: the committed flag sets (``<engine>-<version>.json``), package data
DATA_DIR = Path(__file__).resolve().parent
_KIT = Path(__file__).resolve().parents[3]  # the checkout: benchlib/engines/_flagsets/
#: how a parser reads a command line: argparse's rules, or llama.cpp's common/arg.cpp (no
#: ``--flag=value``, no abbreviations); stored in every flag set
Style = Literal["argparse", "llamacpp"]
LLAMACPP_STYLE: Style = "llamacpp"


@dataclass(frozen=True, slots=True)
class FlagOption:
    """One option: its spellings, and argparse's ``nargs`` (``None`` one value, ``0`` none,
    an int, ``"?"``, ``"*"`` or ``"+"``); ``choices`` only where the parser fixes them."""

    flags: tuple[str, ...]
    nargs: int | str | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    repeat: bool = False
    deprecated: str | None = None
    removed: str | None = None

    @property
    def name(self) -> str:
        """How messages name it: the first long spelling."""
        return next((f for f in self.flags if f.startswith("--")), self.flags[0])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"flags": list(self.flags), "nargs": self.nargs}
        for key in ("choices", "metavar", "deprecated", "removed"):
            value = getattr(self, key)
            if value is not None:
                out[key] = list(value) if key == "choices" else value
        if self.repeat:
            out["repeat"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FlagOption:
        choices = data.get("choices")
        return cls(tuple(data["flags"]), data.get("nargs"),
                   tuple(choices) if choices is not None else None, data.get("metavar"),
                   bool(data.get("repeat", False)), data.get("deprecated"), data.get("removed"))


@dataclass(frozen=True)
class FlagSet:
    """An engine version's options and its parser's reading rules.

    ``underscores``: ``--foo_bar`` is read as ``--foo-bar`` (vLLM, llama.cpp); ``dotted``:
    ``--json-flag.key value`` sets one key of a JSON flag (vLLM); ``attached``: a short
    spelling that takes its value glued on (vLLM's ``-O3`` → ``--optimization-level``).
    """

    engine: str
    version: str
    source: str
    options: tuple[FlagOption, ...]
    style: Style = "argparse"
    allow_abbrev: bool = False
    underscores: bool = False
    dotted: bool = False
    attached: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index: dict[str, FlagOption]
        object.__setattr__(self, "_index", {f: o for o in self.options for f in o.flags})

    def option(self, flag: str) -> FlagOption | None:
        """The option spelt exactly ``flag``."""
        return self._index.get(flag)

    @property
    def flags(self) -> list[str]:
        """Every spelling, sorted."""
        return sorted(f for opt in self.options for f in opt.flags)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "engine": self.engine, "version": self.version,
                "source": self.source, "style": self.style, "allow_abbrev": self.allow_abbrev,
                "underscores": self.underscores, "dotted": self.dotted,
                "attached": dict(self.attached),
                "options": [o.to_json() for o in sorted(self.options, key=lambda o: o.flags)]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FlagSet:
        if data.get("schema") != SCHEMA:
            raise FlagSourceError(f"flag set schema {data.get('schema')!r}, not {SCHEMA}")
        return cls(data["engine"], data["version"], data["source"],
                   tuple(FlagOption.from_json(o) for o in data["options"]), data["style"],
                   data["allow_abbrev"], data["underscores"], data["dotted"],
                   dict(data.get("attached", {})))

    def dumps(self) -> str:
        """The JSON text: one option per line, sorted, so a new version's file diffs well."""
        data = self.to_json()
        options = data.pop("options")
        head = json.dumps(data, indent=1)[:-2]
        return head + ',\n "options": [\n' + ",\n".join(
            "  " + json.dumps(o, ensure_ascii=False) for o in options) + "\n ]\n}\n"

    def write(self, path: Path) -> None:
        """Write atomically (two checks at once never read half a file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(self.dumps())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a shared cache from other users
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> FlagSet:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    def read_cached(cls, path: Path) -> FlagSet | None:
        """A cached set, or ``None`` when there is none or it is unreadable (an older
        schema, a half-written file of a killed run): then it is read again."""
        try:
            return cls.read(path)
        except (OSError, ValueError, KeyError, TypeError, FlagSourceError):
            return None


def cache_dir() -> Path:
    """Where flag sets read from installed engines are kept: ``$BENCHLIB_FLAGS_CACHE``, else
    ``.engines/flags/`` of the kit's checkout, else ``~/.cache/benchlib/flags``."""
    given = os.environ.get("BENCHLIB_FLAGS_CACHE")
    if given:
        return Path(given)
    if (_KIT / "pyproject.toml").is_file():
        return _KIT / ".engines" / "flags"
    return Path.home() / ".cache" / "benchlib" / "flags"


def committed_versions(engine: str) -> list[str]:
    """The versions of ``engine`` with a committed flag set."""
    return sorted(p.stem.removeprefix(engine + "-") for p in DATA_DIR.glob(f"{engine}-*.json"))


def committed(engine: str, version: str) -> FlagSet | None:
    """The committed flag set of ``engine`` ``version``, if there is one."""
    path = DATA_DIR / f"{engine}-{version}.json"
    return FlagSet.read(path) if path.is_file() else None
