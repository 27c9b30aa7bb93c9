"""``benchlib sweep``: the highest concurrency (or request rate) that meets given SLOs.

Every flag of ``benchlib measure`` describes each probe's workload and endpoint, with the same
spelling and meaning (the table is :func:`benchlib.cli.measure.flag_table`'s), except the
ones the sweep sets per probe: ``--result-json`` (the probes go to ``--output-dir``),
``--max-concurrency`` (swept; with ``--rate`` it caps every probe), ``--request-rate``
(swept with ``--rate``) and ``--num-prompts`` (when left out: ``--prompts-per-slot`` ×
concurrency, or ``--probe-seconds`` × rate). The start is ``--start``, else the memory
plan's predicted max concurrency for ``--model-config`` on ``--gpu`` (or
``--gpu-memory-gib``) at this workload's request length. Exit code 0: a knee was found; 1:
no load met the SLOs (or the server answered nothing); 2: bad input, the flag named.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlib._exceptions import UsageError, validation_message
from benchlib._secrets import env_secret

__all__ = ["register", "run"]

#: measure's fields that are not flags here: the sweep sets or replaces them
_NOT_HERE = ("result_json", "disable_tqdm")
#: the plan's flags, as ``benchlib plan`` spells them (field → argparse keywords)
_PLAN_FLAGS: dict[str, dict[str, Any]] = {
    "gpu": {"help": "the plan's GPU, from the catalogue (H200, B200, A100-80GB …)"},
    "gpu_memory_gib": {"type": float, "help": "the plan's memory per GPU in GiB"},
    "num_gpus": {"type": int, "help": "the plan's GPUs in all (replicas: num-gpus / tp)"},
    "tp": {"type": int, "help": "the plan's tensor-parallel size"},
    "gpu_memory_utilization": {"type": float, "help": "the plan's (default 0.9)"},
    "weight_dtype": {"help": "the plan's weight dtype (default auto)"},
    "kv_cache_dtype": {"help": "the plan's KV cache dtype (default auto)"},
    "kv_budget_gib": {"type": float, "help": "KV budget per GPU the engine reported: the "
                                             "plan's token count is then exact"},
    "max_num_seqs": {"type": int, "help": "the engine's max_num_seqs (default: vLLM's for "
                                          "the GPU): caps the predicted concurrency"},
    "max_model_len": {"type": int, "help": "tokens per request the plan sizes for (default: "
                                           "--input-len + --output-len)"},
}


def register(sub: Any) -> None:
    from benchlib.cli.measure import flag_table

    p = sub.add_parser(
        "sweep", help="find the highest concurrency (or request rate) that meets SLOs",
        description="Probe an endpoint at rising load (each probe a normal measurement, kept) "
        "until an SLO fails, then bisect to one step: the knee is the highest load whose "
        "latencies and goodput meet every SLO. Writes DIR/<probe>.json (+ .requests.jsonl), "
        "DIR/sweep.json and DIR/sweep.png.")
    search = p.add_argument_group("the search")
    search.add_argument("--output-dir", type=Path, required=True, metavar="DIR",
                        help="where the probes, sweep.json and sweep.png go; a run folder's "
                        "RUN/sweep/NAME puts the curve in its 04_compare and report")
    search.add_argument("--slo", action="extend", nargs="+", default=[],
                        metavar="METRIC_STAT_ms=MS",
                        help="a percentile SLO every probe must meet (repeatable), the result "
                        "key turned round: ttft_p99_ms=200, tpot_p50_ms=30, e2el_mean_ms=5000 "
                        "(any metric of the result: ttft, tpot, itl, e2el, ttft_text …)")
    search.add_argument("--min-good-fraction", type=float, default=None, metavar="F",
                        help="with --goodput: the least fraction of a probe's requests that "
                        "must be good, i.e. meet every --goodput SLO (vllm bench serve's "
                        "definition; default 0.9)")
    search.add_argument("--rate", action="store_true",
                        help="sweep the request rate (req/s) instead of the concurrency")
    search.add_argument("--start", type=float, default=None,
                        help="the first load (default: the plan's predicted max concurrency; "
                        "required with --rate)")
    search.add_argument("--min", type=float, default=None, dest="floor",
                        help="the lowest load probed (default: 1; with --rate start / 64)")
    search.add_argument("--max", type=float, default=None, dest="ceiling",
                        help="the highest load probed (default: 64 × the start)")
    search.add_argument("--step", type=float, default=None,
                        help="the knee's resolution (default: 1 concurrency; 5%% of the last "
                        "passing rate)")
    search.add_argument("--prompts-per-slot", type=int, default=8, metavar="K",
                        help="without --num-prompts: each concurrency probe sends K × its "
                        "concurrency requests (default 8)")
    search.add_argument("--probe-seconds", type=float, default=20.0, metavar="S",
                        help="without --num-prompts: each rate probe sends S × its rate "
                        "requests (default 20)")
    planned = p.add_argument_group(
        "the start from the memory plan (without --start)",
        "the plan's max concurrency at this workload's request length, capped by "
        "max_num_seqs, times the replicas")
    planned.add_argument("--model-config", type=Path, default=None,
                         help="config.json, a model folder holding one, or a .gguf file")
    for field, kwargs in _PLAN_FLAGS.items():
        planned.add_argument(f"--{field.replace('_', '-')}", dest=f"plan_{field}",
                             default=None, metavar=field.split("_")[-1].upper(), **kwargs)
    probe = p.add_argument_group("each probe (benchlib measure's flags)")
    for f in flag_table():
        if f.field not in _NOT_HERE:
            probe.add_argument(f.flag, dest=f.field, default=argparse.SUPPRESS, **f.kwargs)
    probe.add_argument("--api-key", help="bearer token (default: $OPENAI_API_KEY); never "
                       "written")
    probe.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                       help="an extra header on every request (repeatable), as measure's")
    p.set_defaults(func=run)


def _planned_start(args: argparse.Namespace, request_tokens: int | None) -> tuple[int, str]:
    """The plan's predicted max concurrency for this workload, and how it was found."""
    from benchlib.memory import PlanConfig, plan

    fields = {k: getattr(args, f"plan_{k}") for k in _PLAN_FLAGS
              if getattr(args, f"plan_{k}") is not None}
    fields.setdefault("max_model_len", request_tokens)
    if fields["max_model_len"] is None:
        raise UsageError("--max-model-len", "give the tokens per request for the plan (a "
                         "file dataset has no fixed length), or --start")
    try:
        cfg = PlanConfig(model=args.model_config, **fields)
    except ValidationError as exc:
        raise UsageError("sweep", validation_message(
            exc, flags={k: f"--{k.replace('_', '-')}" for k in _PLAN_FLAGS}
            | {"model": "--model-config"})) from None
    result = plan(cfg)
    if result.capacity is None:
        raise UsageError("--gpu", "the plan needs a GPU (--gpu or --gpu-memory-gib, or "
                         "--kv-budget-gib) to predict the concurrency; or give --start")
    per_replica = min(math.floor(result.capacity.max_concurrency), result.overhead.max_num_seqs)
    replicas = max(1, result.num_gpus // result.tp)
    start = per_replica * replicas
    if start < 1:
        raise UsageError("--model-config", f"the plan fits {result.capacity.max_concurrency:.2f}"
                         f" requests of {cfg.max_model_len} tokens: not one; give --start")
    source = (f"the plan: {result.capacity.max_concurrency:.1f} requests of "
              f"{cfg.max_model_len} tokens fit the KV cache, max_num_seqs "
              f"{result.overhead.max_num_seqs}, {replicas} replica(s)")
    return start, source


def _config(args: argparse.Namespace) -> Any:
    """The :class:`~benchlib.sweep.SweepConfig` of parsed flags; bad input raises
    :class:`~benchlib.UsageError` naming its flag."""
    from benchlib.cli.measure import config_from_args
    from benchlib.sweep import SweepConfig, parse_slos

    mode = "rate" if args.rate else "concurrency"
    swept = "request_rate" if args.rate else "max_concurrency"
    if hasattr(args, swept):
        flag = "--request-rate" if args.rate else "--max-concurrency"
        raise UsageError(flag, "the sweep sets it for each probe: use --start / --min / --max"
                         + ("" if args.rate else ", or --rate to sweep the rate at this "
                            "concurrency"))
    slos = parse_slos(args.slo)
    try:
        base = config_from_args(args)
    except UsageError as exc:
        raise UsageError("sweep", exc.message) if exc.field == "measure" else exc from None
    if not slos and not base.goodput:
        raise UsageError("--slo", "give at least one SLO: --slo ttft_p99_ms=200 … and/or "
                         "--goodput ttft:200 …")
    if args.min_good_fraction is not None and not base.goodput:
        raise UsageError("--min-good-fraction", "only with --goodput SLOs (it bounds the "
                         "fraction of requests that meet them)")
    for name, value in (("--start", args.start), ("--min", args.floor), ("--max", args.ceiling),
                        ("--step", args.step)):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise UsageError(name, f"must be a finite number > 0, got {value:g}")
        if value is not None and mode == "concurrency" and not float(value).is_integer():
            raise UsageError(name, f"a concurrency is a whole number, got {value:g}")
    if args.start is not None:
        start, source = args.start, "given"
    elif mode == "rate":
        raise UsageError("--start", "give the first request rate to probe (req/s)")
    elif args.model_config is not None:
        tokens = base.input_len + base.output_len \
            if base.dataset in ("random", "text") and base.output_len else None
        start, source = _planned_start(args, tokens)
    else:
        raise UsageError("--start", "give --start N, or --model-config (with --gpu) to start "
                         "from the memory plan's predicted max concurrency")
    floor = args.floor if args.floor is not None else (1.0 if mode == "concurrency"
                                                      else start / 64)
    ceiling = args.ceiling if args.ceiling is not None else 64 * start
    if floor > ceiling:
        raise UsageError("--min", f"{floor:g} is above --max {ceiling:g}")
    if not floor <= start <= ceiling:
        raise UsageError("--start", f"{start:g} is outside [--min {floor:g}, --max {ceiling:g}]")
    try:
        return SweepConfig(
            base=base, mode=mode, slos=slos,
            min_good_fraction=args.min_good_fraction if args.min_good_fraction is not None
            else 0.9, start=start, start_source=source, floor=floor, ceiling=ceiling,
            step=args.step, num_prompts=getattr(args, "num_prompts", None),
            prompts_per_slot=args.prompts_per_slot, probe_seconds=args.probe_seconds,
            output_dir=args.output_dir)
    except ValidationError as exc:
        raise UsageError("sweep", validation_message(exc, flags={
            "min_good_fraction": "--min-good-fraction", "prompts_per_slot": "--prompts-per-slot",
            "probe_seconds": "--probe-seconds"})) from None


def _load(mode: str, load: float | None) -> str:
    if load is None:
        return "none"
    return f"concurrency {int(load)}" if mode == "concurrency" else f"rate {load:g} req/s"


def run(args: argparse.Namespace) -> int:
    from benchlib.measure.wire._endpoint import parse_header
    from benchlib.sweep import PLOT_NAME, SUMMARY_NAME, sweep

    cfg = _config(args)
    headers = [parse_header(h) for h in args.header]
    api_key = args.api_key or env_secret("OPENAI_API_KEY")
    start = _load(cfg.mode, cfg.start)
    print(f"sweep: {start} ({cfg.start_source}) within [{cfg.floor:g}, {cfg.ceiling:g}]; "
          f"probes in {cfg.output_dir}", flush=True)
    summary = sweep(cfg, api_key=api_key, headers=headers,
                    log=lambda line: print(line, flush=True))
    fail = summary.probe_at(summary.first_fail)
    why = f" ({_load(cfg.mode, summary.first_fail)} fails: {'; '.join(fail.failed_by)})" \
        if fail is not None else ""
    if summary.knee is None:
        print(f"no load met the SLOs: even {_load(cfg.mode, cfg.floor)} missed{why}", flush=True)
    else:
        print(f"knee: {_load(cfg.mode, summary.knee)}{why}"
              + (" — the ceiling: raise --max to look higher" if summary.ceiling_reached
                 else ""), flush=True)
    print(f"{len(summary.probes)} probes in {summary.seconds:.1f} s; summary: "
          f"{cfg.output_dir / SUMMARY_NAME}; plot: {cfg.output_dir / PLOT_NAME}", flush=True)
    return 0 if summary.knee is not None else 1
