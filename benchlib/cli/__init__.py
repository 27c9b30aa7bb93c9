"""The ``benchlib`` command line: one module per command, each with ``register`` and ``run``.

Bad input never produces a traceback: argparse errors, pydantic validation errors and
:class:`~benchlib.UsageError` all print one message naming the flag and exit with code 2.

Where each command's layer sits: ``docs/architecture.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from benchlib._exceptions import BenchlibError
from benchlib.cli import (
    import_,
    launch,
    measure,
    plan,
    random_gguf,
    real_model,
    report,
    run,
    scripted,
    sweep,
    tiny,
)

__all__ = ["build_parser", "main"]

_COMMANDS = (measure, sweep, run, report, launch, plan, scripted, tiny, real_model,
             random_gguf, import_)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchlib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``benchlib`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except BenchlibError as exc:
        print(f"benchlib {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"benchlib {args.command}: interrupted", file=sys.stderr)
        return 130
    return code
