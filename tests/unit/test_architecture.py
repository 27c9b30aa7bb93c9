"""docs/architecture.md is true of the code (issue 38): its layers table is
``benchlib/_layers.py``'s, its table of the measuring client's sub-packages lists exactly their
modules, and every file and module it names exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from benchlib._layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
_ROW = re.compile(r"^\| (?P<first>[^|]+) \| (?P<second>[^|]+) \|", re.M)


def _table(heading: str) -> list[tuple[str, str]]:
    """The (first, second) cells of the table under ``heading``."""
    section = DOC.split(heading, 1)[1].split("\n#", 1)[0]
    return [(m["first"].strip(), m["second"].strip()) for m in _ROW.finditer(section)
            if not m["first"].startswith(("---", "layer", "sub-package"))]


def _names(cell: str) -> set[str]:
    return set(re.findall(r"`([\w.]+)`", cell))


def test_the_layers_table_is_the_codes() -> None:
    drawn: dict[str, int] = {}
    for layer, packages in _table("## Layers"):
        for name in _names(packages):
            drawn[name] = int(layer)
    assert drawn == {name: i for i, layer in enumerate(LAYERS) for name in layer}


def test_the_measure_table_lists_each_sub_package_s_modules() -> None:
    measure = ROOT / "benchlib" / "measure"
    real: dict[str, set[str]] = {p.parent.name: set() for p in measure.glob("*/__init__.py")}
    for p in measure.glob("*/_*.py"):
        if p.name != "__init__.py":
            real[p.parent.name].add(p.stem)
    drawn = {next(iter(_names(pkg))): _names(mods)
             for pkg, mods in _table("### The measuring client's sub-packages")}
    assert drawn == real
    loose = [p.name for p in measure.glob("_*.py") if p.name != "__init__.py"]
    assert not loose, f"measure's modules live in its sub-packages: {loose}"


def test_every_file_the_page_names_exists() -> None:
    paths = set(re.findall(r"(?<![\w/.])((?:benchlib|tests|tools|notebooks|params)/[\w/.-]+"
                           r"\.(?:py|ipynb|yaml))", DOC))
    short = set(re.findall(r"(?<![\w/.])((?:measure|memory|adapters|pipeline)/[\w/]+\.py)",
                           DOC))
    assert paths and short
    missing = [p for p in paths if not (ROOT / p).is_file() and "NN_" not in p]
    missing += [p for p in short if not (ROOT / "benchlib" / p).is_file()]
    assert not missing, missing


def test_every_dotted_name_the_page_names_exists() -> None:
    """``memory._load.load_model_config``, ``engines.parse_engine_log`` …: the longest prefix
    that imports, then attributes on it."""
    dotted = set(re.findall(r"`((?:engines|memory|pipeline|measure|recipe|runs|report|"
                            r"adapters)(?:\.\w+)+)`", DOC))
    assert dotted
    missing = []
    for name in sorted(dotted):
        parts = name.split(".")
        for k in range(len(parts), 0, -1):
            try:
                obj: object = importlib.import_module("benchlib." + ".".join(parts[:k]))
            except ImportError:
                continue
            for attr in parts[k:]:
                obj = getattr(obj, attr, None)
            if obj is None:
                missing.append(name)
            break
    assert not missing, missing
