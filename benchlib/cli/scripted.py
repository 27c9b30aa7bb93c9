"""``benchlib scripted-server``: the measuring instrument with known timings."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlib._exceptions import UsageError
from benchlib.cli._common import validation_message

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("scripted-server",
                       help="serve scripted streams with known timings (a measuring instrument)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    p.add_argument("--truth", type=Path, help="JSONL file for the true per-request timings")
    p.add_argument("--model", default="scripted")
    p.add_argument("--ttft-ms", type=float, default=20.0)
    p.add_argument("--itl-ms", type=float, default=5.0)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--output-tokens", type=int, default=None)
    p.add_argument("--no-role-chunk", action="store_true")
    p.add_argument("--reasoning-tokens", type=int, default=0)
    p.add_argument("--reasoning-field", choices=["reasoning_content", "reasoning"],
                   default="reasoning_content")
    p.add_argument("--no-usage", action="store_true", help="never send a usage chunk")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlib.scripted import ScriptConfig, ScriptedServer

    try:
        cfg = ScriptConfig(model=args.model, ttft_ms=args.ttft_ms, itl_ms=args.itl_ms,
                           tokens_per_chunk=args.tokens_per_chunk,
                           output_tokens=args.output_tokens, role_chunk=not args.no_role_chunk,
                           reasoning_tokens=args.reasoning_tokens,
                           reasoning_field=args.reasoning_field, usage=not args.no_usage)
    except ValidationError as exc:
        raise UsageError("scripted-server", validation_message(exc)) from None
    server = ScriptedServer(cfg, truth=args.truth)

    def ready(port: int) -> None:
        print(f"listening on http://{args.host}:{port}", flush=True)

    try:
        asyncio.run(server.serve(args.host, args.port, ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        raise UsageError("--port", f"cannot listen on {args.host}:{args.port}: {exc}") from None
    return 0
