"""``benchlib run PARAMS``: validate a recipe (``--check``) or run its notebooks."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchlib._exceptions import BenchlibError

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run a recipe's notebooks into outputs/YYYY-MM-DD/",
                       description="Execute the recipe's steps with papermill; each notebook "
                       "gets a JSON sidecar with status, results and provenance.")
    p.add_argument("params", type=Path, help="recipe YAML, e.g. params/demo.yaml")
    p.add_argument("--check", action="store_true", help="validate only: exit 0 or 2")
    p.add_argument("--force", action="store_true",
                   help="start a new run folder and measure everything again")
    p.add_argument("--outputs", type=Path, default=Path("outputs"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlib.recipe import load_recipe

    recipe = load_recipe(args.params)
    if args.check:
        from benchlib.engines import check_recipe_args
        from benchlib.recipe import resolve_paths

        for checked in check_recipe_args(resolve_paths(recipe, Path.cwd())):
            print(checked.summary)
        engines = ", ".join(f"{name}: {r.engine.kind}, speculative "
                            f"{r.engine.speculative.label}" for name, r in
                            recipe.variant_recipes()) if recipe.variants else (
            f"engine {recipe.engine.kind}")
        print(f"{args.params}: ok ({recipe.name}: {len(recipe.scenarios)} scenarios, "
              f"{engines})")
        return 0
    from benchlib.pipeline import RunFolder, read_results, run_recipe, summary_table
    from benchlib.pipeline.steps.compare import STEP as COMPARE
    from benchlib.pipeline.steps.measure import STEP as MEASURE

    summary = run_recipe(args.params, outputs=args.outputs, force=args.force)
    folder = RunFolder(path=summary.run_dir)
    print(f"\noutputs: {summary.run_dir}")
    for step, status in summary.statuses.items():
        variant, _, name = step.rpartition("/")
        print(f"  {step:<24} {status:<8} {folder.variant(variant).notebook(name)}")
    import pandas as pd

    for name, _ in recipe.variant_recipes():
        measured = read_results(folder.variant(name).results(MEASURE.name))
        if not measured:
            continue
        table = summary_table(measured)
        cols = ["scenario", "concurrency", "completed", "failed", "median_ttft_ms",
                "median_tpot_ms", "output_throughput", "per_user_tok_s",
                "mean_tokens_per_chunk", "buffered_streams", "client_bound"]
        with pd.option_context("display.width", 200, "display.float_format", "{:.2f}".format):
            header = f"\n{name}" if name else ""
            print(header + "\n" + table[cols].to_string(index=False))
    compared = read_results(folder.results(COMPARE.name)).get("variants")
    if compared:
        cols = ["variant", "scenario", "concurrency", "startup_s", "median_ttft_ms",
                "median_tpot_ms", "per_user_tok_s", "mean_tokens_per_chunk",
                "server_mean_acceptance_length", "speedup", "caveats"]
        with pd.option_context("display.width", 250, "display.float_format", "{:.2f}".format,
                               "display.max_colwidth", 60):
            print("\nvariants side by side\n" + pd.DataFrame(compared)[cols].to_string(
                index=False))
    if not summary.ok:
        failed = [s for s, st in summary.statuses.items() if st != "ok"]
        raise BenchlibError(f"steps not ok: {', '.join(failed)}; see their sidecars in "
                            f"{summary.run_dir}")
    return 0
