"""Results are typed end to end (issue 26): ``dict[str, Any]`` in benchlib/pipeline and
benchlib/report only where the data is open JSON (or, for now, in the one module the engine
adapters are moving), each place named here with why; a new one anywhere fails."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: file → (occurrences, why they stay)
ALLOWED = {
    "benchlib/pipeline/_sidecar.py": (1, "any step's results as its notebook wrote them, "
                                         "copied into the sidecar (JSON)"),
    "benchlib/report/_context.py": (1, "the write-up's names: template data Jinja looks up "
                                       "by name (JSON)"),
    "benchlib/report/_energy.py": (1, "a samples file's JSON header"),
    "benchlib/report/_provenance.py": (2, "the sidecar's provenance, as whichever kit version "
                                    "wrote it (JSON)"),
    "benchlib/pipeline/_dry_build.py": (1, "the keyword arguments every measurement of a "
                                           "scenario shares, passed to measure_config"),
    "benchlib/pipeline/steps/_engine_vs_plan.py": (5, "PlanConfig's keyword settings per "
                                                      "engine kind: typed when the engine "
                                                      "adapters land (issue 26)"),
}
LIMIT = 15
_ANY_DICT = re.compile(r"dict\[str, Any\]")


def _counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for package in ("pipeline", "report"):
        for path in sorted((ROOT / "benchlib" / package).rglob("*.py")):
            n = len(_ANY_DICT.findall(path.read_text(encoding="utf-8")))
            if n:
                counts[path.relative_to(ROOT).as_posix()] = n
    return counts


def test_untyped_dicts_stay_under_the_limit() -> None:
    assert sum(_counts().values()) < LIMIT


def test_each_untyped_dict_is_a_named_boundary() -> None:
    """A module not named above, or more uses than named, fails: type the data instead
    (a result model in benchlib.runs, a JsonValue at a real JSON boundary)."""
    over = {f: n for f, n in _counts().items() if n > ALLOWED.get(f, (0, ""))[0]}
    assert not over, over
