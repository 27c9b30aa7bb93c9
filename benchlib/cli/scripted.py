"""``benchlib scripted-server``: the measuring instrument with known timings."""

from __future__ import annotations

import argparse
import asyncio
import ssl
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
    p.add_argument("--jitter", type=float, default=0.0, metavar="J",
                   help="scale each TTFT and chunk gap by a log-normal factor of median 1 "
                   "and log-space sigma J (a real engine's variation; seeded, see --jitter-seed)")
    p.add_argument("--jitter-seed", type=int, default=0,
                   help="seed of the jitter factors, with each request's count: two servers "
                   "with the same settings draw the same factors")
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--output-tokens", type=int, default=None)
    p.add_argument("--no-role-chunk", action="store_true")
    p.add_argument("--reasoning-tokens", type=int, default=0)
    p.add_argument("--reasoning-field", choices=["reasoning_content", "reasoning"],
                   default="reasoning_content")
    p.add_argument("--no-usage", action="store_true", help="never send a usage chunk")
    p.add_argument("--prefix-cache", action="store_true",
                   help="report each prompt's part an earlier prompt began with, as "
                   "llama.cpp's timings.cache_n / prompt_n in the last event")
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
    p.add_argument("--max-streams", type=int, default=None, metavar="N",
                   help="generate at most N streams at once; later requests wait for a slot "
                   "(TTFT grows past N: a known saturation point)")
    p.add_argument("--crash-above-prompt-chars", type=int, default=None, metavar="N",
                   help="exit the server (a simulated engine crash) on a prompt over N chars")
    p.add_argument("--tls-cert", type=Path, default=None, metavar="PEM",
                   help="serve HTTPS with this certificate (chain) …")
    p.add_argument("--tls-key", type=Path, default=None, metavar="PEM",
                   help="… and this private key (both or neither)")
    p.add_argument("--require-header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="answer 401 to requests without this header (repeatable; a hosted "
                   "API's key check)")
    p.set_defaults(func=run)


def _tls_context(cert: Path | None, key: Path | None) -> ssl.SSLContext | None:
    """The server's TLS context (TLS 1.2+, HTTP/1.1 by ALPN), or ``None`` for plain HTTP."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise UsageError("--tls-cert", "give --tls-cert and --tls-key together")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError("--tls-cert", f"cannot load {cert} / {key}: {exc}") from None
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def _fault_kinds() -> dict[str, str]:
    from benchlib.scripted import FAULT_KINDS

    return FAULT_KINDS


def run(args: argparse.Namespace) -> int:
    from benchlib.measure.wire._endpoint import parse_header
    from benchlib.scripted import FaultRule, ScriptConfig, ScriptedServer

    tls = _tls_context(args.tls_cert, args.tls_key)
    required = tuple(parse_header(h, "--require-header") for h in args.require_header)
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
                           jitter=args.jitter, jitter_seed=args.jitter_seed,
                           prefix_cache=args.prefix_cache,
                           tokens_per_chunk=args.tokens_per_chunk,
                           output_tokens=args.output_tokens, role_chunk=not args.no_role_chunk,
                           reasoning_tokens=args.reasoning_tokens,
                           reasoning_field=args.reasoning_field, usage=not args.no_usage,
                           faults=tuple(faults), huge_chunk_bytes=args.huge_chunk_bytes,
                           idle_timeout_s=args.idle_timeout,
                           close_after_stream_ms=args.close_after_stream,
                           crash_above_prompt_chars=args.crash_above_prompt_chars,
                           max_streams=args.max_streams,
                           required_headers=required)
    except ValidationError as exc:
        raise UsageError("scripted-server", validation_message(exc, flags=True)) from None
    server = ScriptedServer(cfg, truth=args.truth, tls=tls)
    scheme = "https" if tls is not None else "http"

    def ready(port: int) -> None:
        print(f"listening on {scheme}://{args.host}:{port}", flush=True)

    try:
        asyncio.run(server.serve(args.host, args.port, ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        raise UsageError("--port", f"cannot listen on {args.host}:{args.port}: {exc}") from None
    return 0
