"""Mutation testing of benchlib's core with mutmut: how many small changes to the code the
unit tests notice.

mutmut copies the tree into ``mutants/``, makes every small change it knows to each function
of the modules named here (``<`` for ``<=``, ``None`` for a value, a string with ``XX`` around
it, a dropped argument …) and runs the tests that reach that function against each change. A
change no test fails on *survived*: either a test is missing or blunt, or the change cannot
be seen from outside (an *equivalent* mutant, listed in :mod:`mutation_equivalents` with the
reason). The score of a module is the share of its mutants the tests kill (a timeout counts as
a kill: the change made the tests hang, and they stopped)::

    python tools/mutation.py run                    # every module: long (make mutation)
    python tools/mutation.py run benchlib/measure/wire/_sse.py benchlib/measure/stats/_intervals.py
    python tools/mutation.py sample                 # the CI subset (tests/unit/test_mutation.py)

``run`` writes each module's score and survivors to ``benchmarks/mutation.json`` (modules not
run keep their last entry) and the table made from it into ``benchmarks/RESULTS.md``.
``sample`` takes a fixed share of every module's mutants, chosen by a hash of the mutant's
name and changed line (so a new branch is in the sample as often as any other line), runs only
those, and exits 1 when one survives that is not a listed equivalent.

The work happens in a scratch copy of ``benchlib/``, ``tests/`` and ``pyproject.toml``
(a new folder under ``.mutation/`` per run, removed after it; a temporary folder for
``sample``): the tree itself is never changed.
Hypothesis runs derandomized there (``BENCHLIB_HYPOTHESIS_PROFILE=mutation``, tests/conftest.py)
so a mutant is killed or not on every run alike.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_equivalents import EQUIVALENT

ROOT = Path(__file__).resolve().parents[1]
SCORES = ROOT / "benchmarks" / "mutation.json"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- mutation:begin -->", "<!-- mutation:end -->"

#: the core's modules and the tests that may kill their mutants (mutmut runs, per mutant, only
#: those of them that reach the mutated function)
MODULES: dict[str, tuple[str, ...]] = {
    # the SSE decoder and the wire stamps
    "benchlib/measure/wire/_sse.py": ("tests/unit/measure/test_sse.py",),
    "benchlib/measure/wire/_capture.py": ("tests/unit/measure",),
    "benchlib/measure/wire/_timing.py": ("tests/unit/measure",),
    "benchlib/measure/wire/_connection.py": ("tests/unit/measure",),
    # statistics, bounds, client-bound rules, result keys
    "benchlib/measure/stats/_intervals.py": ("tests/unit/measure",),
    "benchlib/measure/stats/_metrics.py": ("tests/unit/measure",),
    "benchlib/measure/wire/_limits.py": ("tests/unit/measure",),
    "benchlib/measure/results/_result.py": ("tests/unit/measure",),
    # the memory plan: weights, KV (with the hybrid models' state), overhead, the plan
    "benchlib/memory/_weights.py": ("tests/unit/memory",),
    "benchlib/memory/_kv.py": ("tests/unit/memory",),
    "benchlib/memory/_layers.py": ("tests/unit/memory",),
    "benchlib/memory/_overhead.py": ("tests/unit/memory",),
    "benchlib/memory/_plan.py": ("tests/unit/memory",),
    # the importers of other tools' results
    **{f"benchlib/importers/_{m}.py": ("tests/unit/importers",) for m in (
        "aiperf", "common", "console", "detect", "guidellm", "model", "seed", "sglang", "vllm")},
    # the recipe's validation
    # not tests/unit/recipe/test_recipe.py: it runs the CLI in subprocesses (about two
    # minutes), so the folder would take each surviving mutant that long; the in-process
    # tests below reach every validator
    **{m: tuple(f"tests/unit/recipe/test_{t}.py" for t in (
        "schema", "load_errors", "variants", "scenario", "seeding", "seed000_client",
        "seed003_prompts", "assumptions")) for m in (
        "benchlib/recipe/_schema.py", "benchlib/recipe/_rules.py")},
    "benchlib/recipe/_load.py": ("tests/unit/recipe",),
    "benchlib/recipe/_assumptions.py": ("tests/unit/recipe",),
    # speculative decoding's acceptance and its reconciliation with the client's count
    "benchlib/measure/server/_spec.py": ("tests/unit/measure",),
    # a capture's bytes to a request's outcome (text events, tokens, usage)
    "benchlib/measure/wire/_decode.py": ("tests/unit/measure",),
    # energy per token from a counter's samples (its own tests: the sampler's race their
    # interval, and a mutant's run beside others' must not decide a kill)
    "benchlib/energy/_core.py": ("tests/unit/energy/test_core.py",),
    # --check: each prompt counted as the engine counts it, against its context
    "benchlib/pipeline/_fits.py": ("tests/unit/pipeline/test_fits.py",
                                   "tests/unit/pipeline/test_dry_build.py"),
    # SGLang's memory plan
    "benchlib/memory/_sglang.py": ("tests/unit/memory",),
    # a prompt set's shared prefixes, in the engine's prefix-cache unit
    "benchlib/measure/workload/_prefix_share.py": ("tests/unit/measure/test_prefix_share.py",
                                                   "tests/unit/measure/test_sglang_random.py"),
}

#: the CI subset: these modules' own fast test files, one mutant in SAMPLE_EVERY of each
SAMPLE: dict[str, tuple[str, ...]] = {
    "benchlib/measure/wire/_sse.py": ("tests/unit/measure/test_sse.py",),
    "benchlib/measure/wire/_capture.py": ("tests/unit/measure/test_capture_messages.py",),
    "benchlib/measure/stats/_intervals.py": ("tests/unit/measure/test_intervals.py",),
    "benchlib/measure/wire/_limits.py": ("tests/unit/measure/test_limits.py",),
    "benchlib/measure/stats/_metrics.py": ("tests/unit/measure/test_metrics.py",
                                     "tests/unit/measure/test_metrics_rules.py",
                                     "tests/unit/measure/test_client_bound.py"),
    **{f"benchlib/importers/_{m}.py": ("tests/unit/importers",) for m in (
        "aiperf", "common", "console", "detect", "guidellm", "model", "seed", "sglang", "vllm")},
    "benchlib/recipe/_load.py": ("tests/unit/recipe/test_load_errors.py",),
    "benchlib/recipe/_assumptions.py": ("tests/unit/recipe/test_assumptions.py",),
    "benchlib/measure/server/_spec.py": ("tests/unit/measure/test_spec.py",),
    "benchlib/measure/wire/_decode.py": ("tests/unit/measure/test_decode.py",
                                         "tests/unit/measure/test_server_timings.py"),
    # triaged to 90 % and more on 2026-12-05, each with its own test file. Not sampled, for
    # CI's time (measured: their eighth added 3 to 5 minutes on two cores): the memory plan's
    # five modules, wire/_connection.py (real sockets) and wire/_timing.py (killed across all
    # of tests/unit/measure); `make mutation` runs them whole
    "benchlib/measure/results/_result.py": ("tests/unit/measure/test_typed_results.py",),
    "benchlib/recipe/_schema.py": ("tests/unit/recipe/test_schema.py",),
    "benchlib/recipe/_rules.py": ("tests/unit/recipe/test_schema.py",),
}
SAMPLE_EVERY = 8


def _scratch_copy(where: Path) -> None:
    """The tree mutmut works on: a fresh copy of every file git knows here (tests read the
    seeds' params, the docs, the notebooks …), without the last run's mutants."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, check=True, capture_output=True).stdout.decode()
    for top in {p.split("/", 1)[0] for p in listed.split("\0") if p}:
        target = where / top
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    shutil.rmtree(where / "mutants", ignore_errors=True)
    for rel in filter(None, listed.split("\0")):
        if (ROOT / rel).is_file():  # a file deleted but not yet committed is listed too
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, where / rel)


def _mutmut(where: Path, modules: dict[str, tuple[str, ...]], pick: str) -> dict[str, Any]:
    """Run mutmut in ``where`` on ``modules`` (``pick``: "all" or "sample") in a child
    interpreter (mutmut forks its workers from it) and return what :func:`_child` wrote."""
    # no PYTHONPATH: the mutated copy (mutants/benchlib) must be the benchlib the tests import
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["BENCHLIB_HYPOTHESIS_PROFILE"] = "mutation"
    args = json.dumps({"modules": modules, "pick": pick})
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "_child", args],
                   cwd=where, env=env, check=True)
    out: dict[str, Any] = json.loads((where / "summary.json").read_text(encoding="utf-8"))
    return out


def _sampled(name: str, diff: str) -> bool:
    """Whether a mutant is in the CI sample: a fixed hash of its name and change."""
    digest = hashlib.sha256(f"{name}\n{diff}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % SAMPLE_EVERY == 0


def _changed_line(diff: str) -> str:
    """The mutated line of a mutant's diff (its ``+`` line), stripped: what the equivalents
    list names beside the mutant, so a renumbered mutant is not taken for a listed one."""
    added = [ln[1:].strip() for ln in diff.splitlines()
             if ln.startswith("+") and not ln.startswith("+++")]
    return " | ".join(added)


def _child(spec: dict[str, Any]) -> None:
    """Inside the scratch tree: configure mutmut for these modules, run it, summarise."""
    from mutmut import configuration
    from mutmut.__main__ import _run, collect_source_file_mutation_data, create_mutants
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    modules: dict[str, list[str]] = spec["modules"]
    cfg = configuration.config()
    cfg.only_mutate = sorted(modules)
    cfg.pytest_add_cli_args_test_selection = sorted({t for ts in modules.values() for t in ts})
    names: list[str] = []
    # the models `make model` built (git ignores them), linked where the tests run: recipes
    # name them by path, and --check counts their prompts only where the tokenizer is there
    Path("mutants").mkdir(exist_ok=True)
    if (ROOT / ".models").is_dir() and not Path("mutants/.models").exists():
        Path("mutants/.models").symlink_to(ROOT / ".models")
    if spec["pick"] == "sample":
        from mutmut.utils.file_utils import (
            copy_also_copy_files,
            copy_src_dir,
            setup_source_paths,
        )
        copy_src_dir()
        copy_also_copy_files()
        setup_source_paths()
        create_mutants(os.cpu_count() or 2)
        found, _ = collect_source_file_mutation_data(mutant_names=())
        names = [n for m, n, _r in found if _sampled(n, get_diff_for_mutant(n, path=m.path))]
    try:
        _run(tuple(names), None)
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise
    found, _ = collect_source_file_mutation_data(mutant_names=tuple(names))
    summary: dict[str, Any] = {}
    for data, name, _ in found:
        status = status_by_exit_code[data.exit_code_by_key[name]]
        entry = summary.setdefault(str(data.path), {"counts": {}, "survivors": []})
        entry["counts"][status] = entry["counts"].get(status, 0) + 1
        if status != "killed" and status != "timeout":
            diff = get_diff_for_mutant(name, path=data.path)
            entry["survivors"].append({"name": name, "status": status,
                                       "change": _changed_line(diff)})
    Path("summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")


def score(counts: dict[str, int]) -> float:
    """Killed (timeouts included) over every mutant: a mutant no test reaches counts as a
    survivor, not as skipped."""
    total = sum(counts.values())
    return (counts.get("killed", 0) + counts.get("timeout", 0)) / total if total else 0.0


def _unexplained(entry: dict[str, Any]) -> list[dict[str, str]]:
    """The survivors that are not listed equivalents (same name, same changed line)."""
    return [s for s in entry["survivors"]
            if s["name"] not in EQUIVALENT or EQUIVALENT[s["name"]][0] != s["change"]]


def _table(scores: dict[str, Any]) -> str:
    rows = ["| module | mutants | killed | score | equivalent | unexplained |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    detail: list[str] = []
    for module, entry in sorted(scores.items()):
        counts = entry["counts"]
        killed = counts.get("killed", 0) + counts.get("timeout", 0)
        open_ = _unexplained(entry)
        rows.append(f"| `{module}` | {sum(counts.values())} | {killed} | "
                    f"{100 * score(counts):.1f} % | {len(entry['survivors']) - len(open_)} | "
                    f"{len(open_)} |")
        for s in entry["survivors"]:
            listed = EQUIVALENT.get(s["name"])
            why = listed[1] if listed and listed[0] == s["change"] else "**not triaged**"
            detail.append(f"- `{s['name'].split('.')[-1]}` ({module}, {s['status']}): "
                          f"`{s['change']}` — {why}")
    return "\n".join([*rows, "", "Survivors:" if detail else "No survivors.", "", *detail])


def _write_results(scores: dict[str, Any], when: str) -> None:
    text = RESULTS.read_text(encoding="utf-8")
    section = (f"{BEGIN}\n# Mutation score of the core, measured\n\n"
               f"`make mutation` (= `python tools/mutation.py run`), {when}. mutmut "
               "changes the code a little, once per mutant, and runs the unit tests that reach "
               "the changed function; the score is the share of mutants some test fails on "
               "(timeouts count as killed, mutants no test reaches as survivors). Survivors are "
               "either killed by a new test or listed in `tools/mutation_equivalents.py` as "
               "equivalent, with the reason shown here. Modules absent from the table were "
               f"not run yet.\n\n{_table(scores)}\n\nNot run yet: "
               f"{', '.join(f'`{m}`' for m in MODULES if m not in scores) or 'none'}.\n{END}")
    if BEGIN in text:
        head, _, rest = text.partition(BEGIN)
        text = head + section + rest.partition(END)[2]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="mutate the named modules (default: all) and record")
    run.add_argument("modules", nargs="*", help=f"any of {', '.join(MODULES)}")
    sub.add_parser("sample", help="the CI subset: exit 1 if a sampled mutant survives")
    child = sub.add_parser("_child")
    child.add_argument("spec")
    args = parser.parse_args(argv)
    if args.cmd == "_child":
        _child(json.loads(args.spec))
        return 0
    if args.cmd == "sample":
        with tempfile.TemporaryDirectory(prefix="benchlib-mutation-") as tmp:
            _scratch_copy(Path(tmp))
            summary = _mutmut(Path(tmp), SAMPLE, "sample")
        bad = {m: _unexplained(e) for m, e in summary.items() if _unexplained(e)}
        for module, entry in sorted(summary.items()):
            print(f"{module}: {sum(entry['counts'].values())} sampled, {entry['counts']}")
        for module, survivors in bad.items():
            for s in survivors:
                print(f"SURVIVED {s['name']} ({module}): {s['change']}")
        return 1 if bad or not summary else 0
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"not a module under mutation: {unknown}")
    chosen = {m: MODULES[m] for m in args.modules or MODULES}
    (ROOT / ".mutation").mkdir(exist_ok=True)
    where = Path(tempfile.mkdtemp(prefix="run-", dir=ROOT / ".mutation"))  # runs side by side
    _scratch_copy(where)
    summary = _mutmut(where, chosen, "all")
    shutil.rmtree(where)
    scores: dict[str, Any] = (json.loads(SCORES.read_text(encoding="utf-8"))
                              if SCORES.is_file() else {})
    scores.update(summary)
    SCORES.write_text(json.dumps(scores, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    from datetime import date
    _write_results(scores, f"{date.today().isoformat()}, on the 2-core CI machine kind")
    for module in sorted(chosen):
        counts = summary.get(module, {}).get("counts", {})
        print(f"{module}: {100 * score(counts):.1f} % of {sum(counts.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
