"""``benchlib scripted-server``: the measuring instrument with known timings."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlib._exceptions import UsageError, validation_message

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
    p.add_argument("--fault", action="append", default=[], metavar="KIND[:SELECT]",
                   help="inject a fault (repeatable; the first rule that selects a request "
                   "applies). SELECT: every=N[:start=K] (requests K, K+N, …; K defaults to "
                   "N) or fraction=F (spread evenly); none: every request. KIND: "
                   + "; ".join(f"{k}: {v}" for k, v in _fault_kinds().items()))
    p.add_argument("--huge-chunk-bytes", type=int, default=4 << 20,
                   help="text size of the huge-chunk fault's chunk (default 4 MiB)")
    p.add_argument("--idle-timeout", type=float, default=None, metavar="S",
                   help="close keep-alive connections idle for S seconds (uvicorn: 5)")
    p.add_argument("--close-after-stream", type=float, nargs="?", const=0.0, default=None,
                   metavar="MS", help="close every connection MS ms (default 0) after a "
                   "streamed response, as llama-server does at once")
    p.add_argument("--crash-above-prompt-chars", type=int, default=None, metavar="N",
                   help="exit the server (a simulated engine crash) on a prompt over N chars")
    p.set_defaults(func=run)


def _fault_kinds() -> dict[str, str]:
    from benchlib.scripted import FAULT_KINDS

    return FAULT_KINDS


def run(args: argparse.Namespace) -> int:
    from benchlib.scripted import FaultRule, ScriptConfig, ScriptedServer

    faults = []
    for spec in args.fault:
        try:
            faults.append(FaultRule.parse(spec))
        except ValidationError as exc:
            raise UsageError("--fault", f"{spec!r}: {validation_message(exc)}") from None
        except ValueError as exc:
            raise UsageError("--fault", str(exc)) from None
    try:
        cfg = ScriptConfig(model=args.model, ttft_ms=args.ttft_ms, itl_ms=args.itl_ms,
                           tokens_per_chunk=args.tokens_per_chunk,
                           output_tokens=args.output_tokens, role_chunk=not args.no_role_chunk,
                           reasoning_tokens=args.reasoning_tokens,
                           reasoning_field=args.reasoning_field, usage=not args.no_usage,
                           faults=tuple(faults), huge_chunk_bytes=args.huge_chunk_bytes,
                           idle_timeout_s=args.idle_timeout,
                           close_after_stream_ms=args.close_after_stream,
                           crash_above_prompt_chars=args.crash_above_prompt_chars)
    except ValidationError as exc:
        raise UsageError("scripted-server", validation_message(exc, flags=True)) from None
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
