"""``benchlib tiny-model``: write the tiny offline model."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("tiny-model", help="write a tiny random-weight Llama model (offline)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlib.models import make_tiny_model

    path = make_tiny_model(args.out, seed=args.seed)
    print(f"tiny model: {path}")
    return 0
