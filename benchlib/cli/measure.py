"""``benchlib measure``: stream requests at an endpoint and report vLLM-style metrics."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlib._exceptions import MeasureError, UsageError
from benchlib.cli._common import validation_message

__all__ = ["register", "run"]


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


def register(sub: Any) -> None:
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
        raise UsageError("measure", validation_message(exc)) from None
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or None
    result = measure(cfg, api_key=api_key)
    print(format_result(result, percentiles), flush=True)
    if cfg.result_json is not None:
        print(f"result: {cfg.result_json}", flush=True)
    if result["completed"] == 0:
        first = next((e for e in result["errors"] if e), "unknown error")
        raise MeasureError(f"all {result['failed']} requests failed; first error: {first}")
    return 0
