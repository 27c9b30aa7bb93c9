"""Compare two run folders field by field: every JSON file of one (results, sidecars,
recipe, state) beside the same file of the other, with what a re-run always changes left
out (dates and times, the kit's commit, absolute paths, the measured numbers' values).

Why: a change to how results are written (typed results, issue 26) must leave a run folder
as it was, but for what the change adds. Run the demo (or any recipe) before and after,
then ``python tools/compare_run_folders.py BEFORE_RUN AFTER_RUN``: it prints one line per
difference — a key only one side has, a value of another JSON type (an int that became a
float), a different text or flag — and exits 1 when there is any. Numbers are compared by
type only: a re-run measures new ones.

What else a re-run changes (how many /metrics scrapes a scenario took, whether the client was
ever the bound, the caveats and verdicts that follow from measured numbers, the text a model
generated) is told apart by a *control*: a second run of the same recipe with the code from
before (``--control RUN``). A difference at a field where the control run differs from the
first one too is the measurement's, not the change's, and is left out (list positions count as
one field); the count left out is printed, so nothing is hidden.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

#: keys whose text a re-run changes: when, the kit's commit, paths and hashes of the folder
VOLATILE = re.compile(r"^(date|started_at|finished_at|kit_commit|kit_dirty|recipe_sha256|"
                      r"local_path|result_json|engine_log|base_url|command|samples_file|"
                      r"requests_jsonl|file|notebook|hostname|[a-z_]*_url)$")

Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]


def differences(before: Json, after: Json, where: str = "") -> list[str]:
    """One line per difference between two JSON values (see the module's docstring)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after)):
            here = f"{where}.{key}" if where else key
            if key not in before:
                out.append(f"+ {here} (only after)")
            elif key not in after:
                out.append(f"- {here} (only before)")
            elif not VOLATILE.match(key):
                out += differences(before[key], after[key], here)
        return out
    if isinstance(before, list) and isinstance(after, list):
        out = [f"~ {where}: {len(before)} items before, {len(after)} after"] \
            if len(before) != len(after) else []
        for i, (b, a) in enumerate(zip(before, after, strict=False)):
            out += differences(b, a, f"{where}[{i}]")
        return out
    if type(before) is not type(after):
        return [f"~ {where}: {type(before).__name__} {before!r} before, "
                f"{type(after).__name__} {after!r} after"]
    if isinstance(before, str | bool) and before != after:
        return [f"~ {where}: {before!r} before, {after!r} after"]
    return []


def compare_folders(before: Path, after: Path) -> list[str]:
    """The differences of every JSON file in either folder (one not in both: a line)."""
    names = sorted({p.relative_to(before) for p in before.rglob("*.json")}
                   | {p.relative_to(after) for p in after.rglob("*.json")})
    out: list[str] = []
    for name in names:
        b, a = before / name, after / name
        if not a.is_file():
            out.append(f"- {name} (only before)")
        elif not b.is_file():
            out.append(f"+ {name} (only after)")
        else:
            out += differences(json.loads(b.read_text(encoding="utf-8")),
                               json.loads(a.read_text(encoding="utf-8")), str(name))
    return out


def field_of(line: str) -> str:
    """The field a difference line names, whichever variant, scenario, concurrency or list
    position it is at: ``~ v1/measure/chat-c4.json.timing.x[3]: …`` and ``~
    v2/.results/03_measure.json.random/c1.timing.x[0]: …`` name ``…timing.x[]`` of a
    measurement. A field that moves by itself in one measurement of the control re-run is a
    measurement's field in all of them."""
    path = line[2:].split(": ", 1)[0].removesuffix(" (only after)").removesuffix(
        " (only before)")
    where, dot, key = path.partition(".json")
    where = re.sub(r"^[^/]+/(?=.*/|[^/]*\.json)", "*/", where + dot)  # the variant's folder
    where = re.sub(r"[^/]+-c\d+(?=\.)", "*", where)  # measure/chat-c4.json
    key = re.sub(r"[\w.-]+/c\d+(?=\.|$)", "*", key)  # a result's chat/c4 key
    return re.sub(r"\[\d+\]", "[]", where + key)


def without_rerun_noise(found: list[str], control: list[str]) -> tuple[list[str], int]:
    """``found`` less the lines at a field where a control re-run (same code) differs too,
    and how many were left out."""
    noisy = {field_of(line) for line in control}
    kept = [line for line in found if field_of(line) not in noisy]
    return kept, len(found) - len(kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="a run folder, before the change")
    parser.add_argument("after", type=Path, help="the same recipe's run folder, after")
    parser.add_argument("--control", type=Path, default=None,
                        help="a second run folder made with the code from before: the fields "
                             "it differs in from BEFORE are the measurement's and are left out")
    args = parser.parse_args(argv)
    for name in ("before", "after", "control"):
        folder = getattr(args, name)
        if folder is not None and not (folder / "run.json").is_file():
            print(f"compare_run_folders: {name}: {folder} is not a run folder (no run.json)",
                  file=sys.stderr)
            return 2
    found = compare_folders(args.before, args.after)
    if args.control is not None:
        found, noise = without_rerun_noise(found, compare_folders(args.before, args.control))
        print(f"{noise} differences left out: the control re-run differs at those fields too")
    print("\n".join(found) if found else "no differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
