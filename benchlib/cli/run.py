"""``benchlib run PARAMS…``: validate recipes (``--check``) or run their notebooks; several
recipes, or a folder of them, make a batch (:mod:`benchlib.pipeline._batch`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib._exceptions import BenchlibError, UsageError

if TYPE_CHECKING:
    from benchlib.pipeline import RunSummary

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run recipes' notebooks into outputs/YYYY-MM-DD/",
                       description="Execute a recipe's steps with papermill; each notebook "
                       "gets a JSON sidecar with status, results and provenance. Several "
                       "recipes (or a folder of them) run in turn, one engine alive at a "
                       "time, past a failed one, with an index (index.json, index.html) in "
                       "outputs/YYYY-MM-DD/batch-HHMMSS/.")
    p.add_argument("params", type=Path, nargs="+",
                   help="recipe YAML files or folders of them, e.g. params/demo.yaml")
    p.add_argument("--check", action="store_true", help="validate only: exit 0 or 2")
    p.add_argument("--force", action="store_true",
                   help="start a new run folder and measure everything again")
    p.add_argument("--outputs", type=Path, default=Path("outputs"))
    p.add_argument("--variants", type=lambda v: [n.strip() for n in v.split(",")],
                   metavar="NAME[,NAME…]",
                   help="run only these variants now (one recipe): the others wait for a "
                        "later run of the recipe, which resumes the folder; the run-wide "
                        "steps (04_compare …) run once every variant is done")
    p.set_defaults(func=run)


def _check(path: Path) -> None:
    from benchlib.engines import check_recipe_args
    from benchlib.recipe import assumption_caveats, open_recipe
    from benchlib.references import recipe_references

    recipe = resolved = open_recipe(path)
    for checked in check_recipe_args(resolved):
        print(checked.summary)
    refs = recipe_references(resolved)  # read once: the write-up check below uses them
    if recipe.compare.references:
        print(f"references: {len(refs)} published results in "
              f"{len(recipe.compare.references)} files, each beside a scenario of the recipe")
    from benchlib.pipeline._dry_build import dry_build

    for line in dry_build(resolved):
        print(line)
    from benchlib.pipeline._power import power_cap_line

    cap = power_cap_line(resolved)
    if cap is not None:
        print(cap)
    from benchlib.provenance import lock_summary

    for lock in dict.fromkeys(r.engine.lock for _, r in resolved.variant_recipes()):
        if lock is not None:
            print(lock_summary(lock))
    from benchlib.report import check_skeleton

    cells = check_skeleton(resolved, refs)
    print(f"write-up: {cells} cells, every name they cite is one the run will have")
    for line in assumption_caveats(recipe.assumptions):
        print(f"caveat: {line}")
    engines = ", ".join(f"{name}: {r.engine.kind}, speculative "
                        f"{r.engine.speculative.label}" for name, r in
                        recipe.variant_recipes()) if recipe.variants else (
        f"engine {recipe.engine.kind}")
    print(f"{path}: ok ({recipe.name}: {len(recipe.scenarios)} scenarios, {engines})")


def run(args: argparse.Namespace) -> int:
    from benchlib.pipeline._batch import expand_recipes, run_batch

    paths = expand_recipes(args.params)
    if args.variants is not None and len(paths) != 1:
        raise UsageError("--variants", f"names the variants of one recipe; {len(paths)} "
                         "recipes given")
    if args.check:
        if args.variants is not None:  # the names too, as a run would check them
            from benchlib.pipeline._partial import chosen_variants
            from benchlib.recipe import open_recipe

            chosen_variants(open_recipe(paths[0]), args.variants)
        bad = []
        for path in paths:
            try:
                _check(path)
            except UsageError as exc:
                if len(paths) == 1:
                    raise
                print(f"benchlib run: {exc}", file=sys.stderr, flush=True)
                bad.append(str(path))
        if bad:
            raise UsageError("params", f"{len(bad)} of {len(paths)} recipes invalid: "
                             f"{', '.join(bad)}")
        return 0
    if len(paths) == 1:
        summary = _run_one(paths[0], args)
        if not summary.ok:
            failed = [s for s, st in summary.statuses.items() if st != "ok"]
            raise BenchlibError(f"steps not ok: {', '.join(failed)}; see their sidecars in "
                                f"{summary.run_dir}")
        return 0
    folder, index = run_batch(paths, args.outputs, lambda p: _run_one(p, args))
    print(f"\nbatch index: {folder / 'index.html'}")
    for entry in index.entries:
        print(f"  {entry.status:<12} {entry.recipe}  {entry.run_dir or entry.error or ''}")
    failed = [e.recipe for e in index.entries if e.status != "ok"]
    if failed:
        raise BenchlibError(f"{len(failed)} of {len(paths)} recipes not ok: "
                            f"{', '.join(failed)}; see {folder / 'index.html'}")
    return 0


def _run_one(path: Path, args: argparse.Namespace) -> RunSummary:
    """Run one recipe and print where its notebooks went and its tables."""
    import pandas as pd

    from benchlib.pipeline import run_recipe
    from benchlib.recipe import open_recipe
    from benchlib.runs import STEP_COMPARE, STEP_MEASURE, RunFolder, summary_table

    recipe = open_recipe(path)  # once: the runner takes it as read
    summary = run_recipe(path, recipe, outputs=args.outputs, force=args.force,
                         variants=args.variants)
    folder = RunFolder(path=summary.run_dir)
    report = _render_report(summary.run_dir, recipe.writeup)
    print(f"\noutputs: {summary.run_dir}")
    for step, status in summary.statuses.items():
        variant, _, name = step.rpartition("/")
        print(f"  {step:<24} {status:<8} {folder.variant(variant).notebook(name)}")
    for name, _ in recipe.variant_recipes():
        measured = folder.variant(name).result(STEP_MEASURE)
        if measured is None:
            continue
        table = summary_table(measured)
        cols = ["scenario", "concurrency", "completed", "failed", "median_ttft_ms",
                "median_tpot_ms", "output_throughput", "per_user_tok_s",
                "mean_tokens_per_chunk", "buffered_streams", "client_bound"]
        with pd.option_context("display.width", 200, "display.float_format", "{:.2f}".format):
            header = f"\n{name}" if name else ""
            print(header + "\n" + table[cols].to_string(index=False))
    compared = folder.result(STEP_COMPARE)
    if compared is not None and compared.variants:
        cols = ["variant", "scenario", "concurrency", "startup_s", "median_ttft_ms",
                "median_tpot_ms", "per_user_tok_s", "mean_tokens_per_chunk",
                "server_mean_acceptance_length", "speedup", "caveats"]
        with pd.option_context("display.width", 250, "display.float_format", "{:.2f}".format,
                               "display.max_colwidth", 60):
            print("\nvariants side by side\n" + pd.DataFrame(
                [r.model_dump() for r in compared.variants])[cols].to_string(index=False))
    if compared is not None and compared.references:
        cols = ["reference", "scenario", "concurrency", "metric", "unit", "published",
                "measured", "measured_over_published"]
        table = pd.DataFrame([r.model_dump() for r in compared.references])
        with pd.option_context("display.width", 200, "display.float_format", "{:.2f}".format):
            print("\nbeside the published results (caveats in 04_compare)\n"
                  + table[[c for c in cols if c in table]].to_string(index=False))
    print(f"\n{report}")
    return summary


def _render_report(run_dir: Path, skeleton: Path | None) -> str:
    """Render the run's report.html and writeup.md, failed steps and all (they show what was
    reached); a report that cannot be rendered is said, never a lost run. The line to print."""
    from benchlib.report import render_report

    if skeleton is not None and not skeleton.is_absolute():
        skeleton = Path.cwd() / skeleton
    try:
        files = render_report(run_dir, skeleton, strict=False)
    except Exception as exc:  # the run is on disk whatever the report does
        return (f"report: not rendered ({type(exc).__name__}: {exc}); `benchlib report "
                f"{run_dir}` tries again")
    return (f"report: {files.html}\nwrite-up: {files.markdown} (edit {files.notebook.name} "
            f"and run `benchlib report {run_dir}` to render it again)")
