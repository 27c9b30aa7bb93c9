"""``benchlib plan``: will this model fit, how much KV, how many requests, how fast at best;
with ``--gpus-per-node G``, how many nodes of G × GPU it needs for ``--concurrency`` requests
of ``--max-model-len`` tokens, and the tp × pp layout (:mod:`benchlib.memory._nodes`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlib._exceptions import UsageError, validation_message
from benchlib.adapters import PLANNED_KINDS, adapter

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="memory plan: weights, KV cache, concurrency, decode floor",
                       description="Predict what vLLM will report (weights, KV budget, KV tokens, "
                       "max concurrency) and the decode floor, per GPU, from a config.json or "
                       "GGUF, before downloading the weights.")
    p.add_argument("--model-config", type=Path, required=True,
                   help="config.json, a model folder holding one, or a .gguf file")
    gpu = p.add_mutually_exclusive_group()
    gpu.add_argument("--gpu", help="GPU name from the catalogue (H200, B200, A100-80GB, …)")
    gpu.add_argument("--gpu-memory-gib", type=float, help="total memory per GPU in GiB")
    p.add_argument("--gpu-bandwidth-gbs", type=float, help="memory bandwidth (GB/s) for the "
                   "decode floor when --gpu is not given")
    p.add_argument("--num-gpus", type=int, help="GPUs in all (a multiple of --tp)")
    p.add_argument("--tp", type=int, help="tensor-parallel size (default: --num-gpus or 1)")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--weight-dtype", default="auto",
                   help="auto (the checkpoint's quantization_config), bf16, fp16, fp32, fp8, "
                   "int8, int4, awq, gptq, nvfp4, mxfp4, bnb-nf4, bnb-int8")
    p.add_argument("--kv-cache-dtype", default="auto", help="auto (the checkpoint's KV "
                   "quantization, else the model dtype, as vLLM), bf16, fp16, fp8, nvfp4")
    p.add_argument("--quantization", help="vLLM's --quantization: must match the "
                   "checkpoint's; fp8 or bitsandbytes quantize an unquantized one at load")
    p.add_argument("--language-model-only", action="store_true", help="vLLM's flag: a "
                   "multimodal checkpoint's vision/audio towers are not loaded")
    p.add_argument("--max-model-len", type=int, help="default: the config's "
                   "max_position_embeddings")
    p.add_argument("--kv-budget-gib", type=float, help="KV budget per GPU as the engine "
                   "reported it ('Available KV cache memory'); skips the overhead model")
    p.add_argument("--max-num-batched-tokens", type=int, help="default: vLLM's for the GPU")
    p.add_argument("--max-num-seqs", type=int, help="default: vLLM's for the GPU")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--vllm-version", default="0.32", help="changes how the overhead and the "
                   "'KV cache size' line are computed (default 0.32)")
    p.add_argument("--engine", choices=PLANNED_KINDS, default=PLANNED_KINDS[0],
                   help="the engine whose reports the plan adds (sglang: what SGLang will "
                   "report, max_total_num_tokens)")
    p.add_argument("--mem-fraction-static", type=float, help="SGLang's; default: SGLang's own "
                   "heuristic for the GPU")
    p.add_argument("--speculative", help="the speculative method the engine will run (eagle, "
                   "mtp, ngram, draft …): vLLM profiles its rejection sampler, SGLang reserves "
                   "memory for the draft (2 GiB, 6 for a draft model, none for n-gram)")
    p.add_argument("--decode-batch", type=int, default=32, help="batch B for the decode floor")
    p.add_argument("--decode-context", type=int, help="context per request for the decode "
                   "floor (default: --max-model-len)")
    p.add_argument("--gpus-per-node", type=int, help="find the smallest number of nodes of "
                   "this many GPUs (tp = GPUs per node or --tp, pp = the rest) that holds "
                   "the weights and --concurrency requests of --max-model-len tokens")
    p.add_argument("--concurrency", type=int, default=1, help="requests that must fit at "
                   "once, each of --max-model-len tokens (with --gpus-per-node; default 1)")
    p.add_argument("--max-nodes", type=int, default=8, help="the most nodes to try "
                   "(with --gpus-per-node; default 8)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def _nodes_text(s: dict[str, Any]) -> str:
    """The node search as rows: one a node count tried, then the answer."""
    lines = [f"{'model':<8}  {s['model']}", f"{'GPU':<8}  {s['gpus_per_node']} × {s['gpu']} "
             f"({s['gpu_memory_gib']:,.2f} GiB) a node; {s['concurrency']} request(s) of "
             f"{s['context']:,} tokens must fit at once"]
    for f in s["tried"]:
        stages = "+".join(str(n) for n in f["stage_layers"])
        lines.append(f"{'tried':<8}  {f['nodes']} node{'s' if f['nodes'] > 1 else ' '}  tp "
                     f"{f['tp']} × pp {f['pp']} (layers {stages}): weights "
                     f"{f['weights_gib_per_gpu']:,.1f} GiB, KV budget "
                     f"{f['kv_budget_gib_per_gpu']:,.1f} GiB per GPU — {f['why']}")
    return "\n".join([*lines, f"{'answer':<8}  {s['answer']}"])


def _text(s: dict[str, Any]) -> str:
    def gib(v: Any) -> str:
        return "-" if v is None else f"{v:,.2f} GiB"

    rows = [
        ("model", f"{s['model']} ({s['model_type']})"),
        ("GPUs", f"{s['num_gpus']} × {s['gpu'] or 'GPU'} ({gib(s['gpu_memory_gib'])}), "
                 f"TP {s['tp']}, utilization {s['gpu_memory_utilization']}"),
        ("parameters", f"{s['total_params'] / 1e9:,.2f} B total, {s['active_params'] / 1e9:,.2f} B "
                       f"active ({s['params_source']})"),
        ("weights", f"{gib(s['weights_gib_total'])} total, {gib(s['weights_gib_per_gpu'])} per GPU"
                    f" — {s['weights_scheme']}"),
        ("high precision", ", ".join(s["weights_high_precision"]) or "-"),
        ("KV per token", f"{s['kv_bytes_per_token']:,} B per GPU "
                         f"(+{s['kv_sliding_bytes_per_token']:,} B sliding, "
                         f"{s['kv_state_bytes_per_request']:,} B state per request)"),
        ("overhead", gib(s["overhead_gib_per_gpu"])),
        ("KV budget", f"{gib(s['kv_budget_gib_per_gpu'])} per GPU ({s['kv_budget_source']})"),
        ("KV cache", "-" if s["kv_cache_tokens"] is None else
         f"{s['kv_cache_tokens']:,} tokens, max concurrency {s['max_concurrency']:.2f}x at "
         f"{s['max_model_len']:,} tokens"),
        ("decode floor", "-" if s["decode_floor_ms"] is None else
         f"{s['decode_floor_ms']:.2f} ms/token at batch 1 ({s['decode_tokens_per_s_ceiling']:,.0f}"
         f" tok/s), {s['decode_floor_ms_at_batch']:.2f} ms at batch {s['decode_batch']} "
         f"({s['decode_tokens_per_s_ceiling_at_batch']:,.0f} tok/s) at "
         f"{s['decode_context_tokens']:,} tokens of context"),
        ("verdict", s["verdict"]),
    ]
    if "sglang_max_total_num_tokens" in s:
        rows.insert(-1, ("SGLang", "-" if s["sglang_max_total_num_tokens"] is None else
                         f"max_total_num_tokens={s['sglang_max_total_num_tokens']:,} at "
                         f"mem_fraction_static {s['sglang_mem_fraction_static']}"))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    lines += [f"{'warning':<{width}}  {w}" for w in s["warnings"]]
    lines += [f"{'note':<{width}}  {n}" for n in s["notes"]]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from benchlib.memory import PlanConfig, plan

    try:
        cfg = PlanConfig(
            model=args.model_config, gpu=args.gpu, gpu_memory_gib=args.gpu_memory_gib,
            gpu_bandwidth_gbs=args.gpu_bandwidth_gbs, num_gpus=args.num_gpus, tp=args.tp,
            gpu_memory_utilization=args.gpu_memory_utilization, weight_dtype=args.weight_dtype,
            kv_cache_dtype=args.kv_cache_dtype, max_model_len=args.max_model_len,
            kv_budget_gib=args.kv_budget_gib, max_num_batched_tokens=args.max_num_batched_tokens,
            max_num_seqs=args.max_num_seqs, block_size=args.block_size,
            vllm_version=args.vllm_version, decode_batch=args.decode_batch,
            decode_context=args.decode_context, mem_fraction_static=args.mem_fraction_static,
            quantization=args.quantization, language_model_only=args.language_model_only,
            speculative=args.speculative, **adapter(args.engine).plan_settings)
    except ValidationError as exc:
        raise UsageError("plan", validation_message(exc, flags=True)) from None
    if args.gpus_per_node is not None:
        from benchlib.memory import plan_nodes

        found = plan_nodes(cfg, gpus_per_node=args.gpus_per_node, concurrency=args.concurrency,
                           max_nodes=args.max_nodes).summary()
        print(json.dumps(found, indent=2) if args.json else _nodes_text(found), flush=True)
        return 0
    summary = plan(cfg).summary()
    print(json.dumps(summary, indent=2) if args.json else _text(summary), flush=True)
    return 0
