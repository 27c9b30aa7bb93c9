"""``benchlib report RUN_DIR``: render a run's report again — after its write-up
(``writeup.ipynb``) was edited, or for a run made before reports existed — into
``report.html`` (opens offline in a browser) and ``writeup.md`` (for a blog)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("report", help="render a run folder's report.html and writeup.md",
                       description="Render the run's report (what ran, provenance, plan "
                       "against measured, figures, references, caveats) with its write-up, "
                       "whose {{ names }} are filled from the run's results.")
    p.add_argument("run_dir", type=Path, help="a run folder, e.g. outputs/2026-12-03/demo")
    p.add_argument("--writeup", type=Path, default=None,
                   help="skeleton for a run that has no writeup.ipynb yet (default: the "
                        "recipe's, else the kit's)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlib._exceptions import UsageError
    from benchlib.report import render_report
    from benchlib.runs import load_recipe_snapshot

    if not (args.run_dir / "recipe.json").is_file():
        raise UsageError("run_dir", f"{args.run_dir} is not a run folder (no recipe.json)")
    # recipe.json keeps paths inside the kit relative to the kit
    skeleton = args.writeup or load_recipe_snapshot(args.run_dir / "recipe.json").writeup
    files = render_report(args.run_dir, skeleton)
    print(f"report: {files.html}\nwrite-up: {files.markdown} (edit {files.notebook}, then run "
          "this again)")
    return 0
