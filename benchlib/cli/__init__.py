"""The ``benchlib`` command line: one module per command, each with ``register`` and ``run``.

Bad input never produces a traceback: argparse errors, pydantic validation errors and
:class:`~benchlib.UsageError` all print one message naming the flag and exit with code 2.

Where each command's layer sits: ``docs/architecture.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from types import MappingProxyType

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

__all__ = ["SKIPPED_IMPORTS", "build_parser", "main"]

_COMMANDS = (measure, sweep, run, report, launch, plan, scripted, tiny, real_model,
             random_gguf, import_)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchlib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS:
        command.register(sub)
    return parser


#: optional imports of other packages that a benchlib command never needs, and what they cost
SKIPPED_IMPORTS: Mapping[str, str] = MappingProxyType({
    # jsonschema (under nbformat, under papermill) imports it when installed (jupyter-events
    # pulls it in) only to check "iri" string formats, and the import builds a Lark grammar:
    # 2.4 s of every `benchlib run` and `--check` on two busy cores (python -X importtime),
    # for formats no schema the kit validates uses
    "rfc3987_syntax": "iri formats in jsonschema",
})


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``benchlib`` console script; returns the exit code."""
    for name in SKIPPED_IMPORTS:  # this process only. None in sys.modules makes `import`
        # raise ModuleNotFoundError (the import system's documented block; typeshed types
        # the values as modules), which jsonschema takes as "not installed"
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
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
