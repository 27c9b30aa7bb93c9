"""``benchlib demo``: the embedded engine launched and measured."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchlib._exceptions import UsageError

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="launch the embedded vLLM CPU engine and measure it")
    p.add_argument("--engine-python", type=Path, required=True)
    p.add_argument("--model-dir", type=Path, required=True)
    p.add_argument("--outputs", type=Path, default=Path("outputs"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlib._demo import run_demo

    if not args.engine_python.exists():
        raise UsageError("--engine-python", f"{args.engine_python} not found (run make engine)")
    if not (args.model_dir / "config.json").is_file():
        raise UsageError("--model-dir", f"{args.model_dir} holds no model (run make model)")
    run_demo(args.engine_python, args.model_dir, args.outputs)
    return 0
