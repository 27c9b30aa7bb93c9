"""The ``benchlib`` command line.

Bad input never produces a traceback: argparse errors, pydantic validation errors and
:class:`~benchlib.UsageError` all print one message naming the flag and exit with code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlib._exceptions import BenchlibError, MeasureError, UsageError

__all__ = ["main"]


def _flag(loc: tuple[int | str, ...]) -> str:
    return "--" + str(loc[0]).replace("_", "-") if loc else "input"


def _validation_message(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{_flag(err['loc'])}: {msg}" if err["loc"] else msg)
    return "; ".join(lines)


def _goodput(values: Sequence[str]) -> dict[str, float]:
    slos: dict[str, float] = {}
    for item in values:
        key, sep, ms = item.partition(":")
        if not sep or key not in ("ttft", "tpot", "e2el"):
            raise UsageError("--goodput", f"expected ttft:MS, tpot:MS or e2el:MS, got {item!r}")
        try:
            slos[key] = float(ms)
        except ValueError:
            raise UsageError("--goodput", f"{item!r}: {ms!r} is not a number") from None
    return slos


def _add_measure(sub: Any) -> None:
    p = sub.add_parser("measure", help="stream requests at an OpenAI-compatible endpoint",
                       description="Measure TTFT, TPOT, ITL, E2EL and throughput with vllm "
                       "bench serve's definitions; output tokens from the server's usage.")
    p.add_argument("--base-url", required=True, help="http://HOST:PORT of the server")
    p.add_argument("--model", required=True, help="model name the server serves")
    p.add_argument("--endpoint", choices=["completions", "chat"], default="completions")
    p.add_argument("--dataset", choices=["random", "file"], default="random")
    p.add_argument("--dataset-path", type=Path, help="JSONL of prompts or chat messages")
    p.add_argument("--input-len", type=int, default=1024)
    p.add_argument("--output-len", type=int, default=None)
    p.add_argument("--random-range-ratio", type=float, default=0.0)
    p.add_argument("--range-ratio-mode", choices=["vllm", "sglang"], default="vllm")
    p.add_argument("--num-prompts", type=int, default=100)
    p.add_argument("--max-concurrency", type=int, default=None)
    p.add_argument("--request-rate", type=float, default=math.inf,
                   help="requests per second (default inf: all at once)")
    p.add_argument("--burstiness", type=float, default=1.0)
    p.add_argument("--num-warmups", type=int, default=0)
    p.add_argument("--request-timeout", type=float, default=600.0, help="seconds per request")
    p.add_argument("--no-ignore-eos", action="store_true", help="let the model stop at EOS")
    p.add_argument("--tokenizer", type=Path, help="local tokenizer folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--metric-percentiles", default="50,90,95,99")
    p.add_argument("--goodput", nargs="+", default=[], metavar="KEY:MS")
    p.add_argument("--result-json", type=Path)
    p.add_argument("--api-key", help="bearer token (default: $OPENAI_API_KEY); never written")
    p.add_argument("--disable-tqdm", action="store_true")


def _cmd_measure(args: argparse.Namespace) -> int:
    from benchlib.measure import MeasureConfig, format_result, measure

    try:
        percentiles = tuple(float(x) for x in args.metric_percentiles.split(",") if x.strip())
    except ValueError:
        raise UsageError("--metric-percentiles",
                         f"expected numbers like 50,90,99, got {args.metric_percentiles!r}"
                         ) from None
    try:
        cfg = MeasureConfig(
            base_url=args.base_url, model=args.model, endpoint=args.endpoint,
            dataset=args.dataset, dataset_path=args.dataset_path, input_len=args.input_len,
            output_len=args.output_len if args.output_len is not None else (
                128 if args.dataset == "random" else None),
            random_range_ratio=args.random_range_ratio, range_ratio_mode=args.range_ratio_mode,
            num_prompts=args.num_prompts, max_concurrency=args.max_concurrency,
            request_rate=args.request_rate, burstiness=args.burstiness,
            num_warmups=args.num_warmups, request_timeout=args.request_timeout,
            ignore_eos=not args.no_ignore_eos, tokenizer=args.tokenizer, seed=args.seed,
            percentiles=percentiles, goodput=_goodput(args.goodput),
            result_json=args.result_json, disable_tqdm=args.disable_tqdm)
    except ValidationError as exc:
        raise UsageError("measure", _validation_message(exc)) from None
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or None
    result = measure(cfg, api_key=api_key)
    print(format_result(result, percentiles), flush=True)
    if cfg.result_json is not None:
        print(f"result: {cfg.result_json}", flush=True)
    if result["completed"] == 0:
        first = next((e for e in result["errors"] if e), "unknown error")
        raise MeasureError(f"all {result['failed']} requests failed; first error: {first}")
    return 0


def _add_scripted(sub: Any) -> None:
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


def _cmd_scripted(args: argparse.Namespace) -> int:
    from benchlib.scripted import ScriptConfig, ScriptedServer

    try:
        cfg = ScriptConfig(model=args.model, ttft_ms=args.ttft_ms, itl_ms=args.itl_ms,
                           tokens_per_chunk=args.tokens_per_chunk,
                           output_tokens=args.output_tokens, role_chunk=not args.no_role_chunk,
                           reasoning_tokens=args.reasoning_tokens,
                           reasoning_field=args.reasoning_field, usage=not args.no_usage)
    except ValidationError as exc:
        raise UsageError("scripted-server", _validation_message(exc)) from None
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


def _add_tiny(sub: Any) -> None:
    p = sub.add_parser("tiny-model", help="write a tiny random-weight Llama model (offline)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)


def _cmd_tiny(args: argparse.Namespace) -> int:
    from benchlib.models import make_tiny_model

    path = make_tiny_model(args.out, seed=args.seed)
    print(f"tiny model: {path}")
    return 0


def _add_demo(sub: Any) -> None:
    p = sub.add_parser("demo", help="launch the embedded vLLM CPU engine and measure it")
    p.add_argument("--engine-python", type=Path, required=True)
    p.add_argument("--model-dir", type=Path, required=True)
    p.add_argument("--outputs", type=Path, default=Path("outputs"))


def _cmd_demo(args: argparse.Namespace) -> int:
    from benchlib._demo import run_demo

    if not args.engine_python.exists():
        raise UsageError("--engine-python", f"{args.engine_python} not found (run make engine)")
    if not (args.model_dir / "config.json").is_file():
        raise UsageError("--model-dir", f"{args.model_dir} holds no model (run make model)")
    run_demo(args.engine_python, args.model_dir, args.outputs)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchlib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_measure(sub)
    _add_scripted(sub)
    _add_tiny(sub)
    _add_demo(sub)
    return parser


_COMMANDS = {"measure": _cmd_measure, "scripted-server": _cmd_scripted,
             "tiny-model": _cmd_tiny, "demo": _cmd_demo}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``benchlib`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except BenchlibError as exc:
        print(f"benchlib {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"benchlib {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
