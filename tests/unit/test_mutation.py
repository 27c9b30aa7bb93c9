"""The CI subset of mutation testing (tools/mutation.py sample): a fixed eighth of the
mutants of the sampled core modules, chosen by a hash of each mutant's name and change, must
all be killed by the unit tests (or be listed equivalents). A new branch no test reaches is
in that eighth as often as any other line, and then fails here; ``make mutation`` measures
every mutant (benchmarks/RESULTS.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from mutation import _changed_line, _unexplained, score  # noqa: E402
from mutation_equivalents import EQUIVALENT  # noqa: E402


def test_score_counts_timeouts_as_kills_and_untested_as_survivors() -> None:
    assert score({"killed": 6, "timeout": 2, "survived": 1, "no tests": 1}) == 0.8
    assert score({}) == 0.0


def test_a_listed_equivalent_must_name_the_same_change() -> None:
    diff = "--- a\n+++ b\n@@ -1 +1 @@\n-    x = 1\n+    x = 2"
    assert _changed_line(diff) == "x = 2"
    name, (change, _) = next(iter(EQUIVALENT.items()))
    listed = {"survivors": [{"name": name, "status": "survived", "change": change}]}
    moved = {"survivors": [{"name": name, "status": "survived", "change": change + " "}]}
    assert _unexplained(listed) == [] and _unexplained(moved) == moved["survivors"]
    # a mutant that only removes code has no changed line: unlisted, it is still unexplained
    removed = {"survivors": [{"name": "benchlib.x.y__mutmut_1", "status": "survived",
                              "change": ""}]}
    assert _unexplained(removed) == removed["survivors"]


def test_sampled_mutants_are_all_killed() -> None:
    done = subprocess.run([sys.executable, "tools/mutation.py", "sample"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    tail = "\n".join(line for line in done.stdout.splitlines() if "⠋" not in line)[-4000:]
    assert done.returncode == 0, tail + done.stderr[-4000:]
    assert "sampled" in done.stdout
