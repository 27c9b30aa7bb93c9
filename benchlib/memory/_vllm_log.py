"""The lines vLLM prints at startup, as the one table of patterns the kit reads them with.

Two readers share :data:`VLLM_LOG_PATTERNS`: :func:`parse_vllm_log` (the memory plan's
comparison with published startups: first match wins, because TP workers print the same
line once each) and :func:`benchlib.engines.parse_engine_log` (the facts of a run's
``engine.log``). One table means a line one of them reads the other reads the same way — a
negative "Available KV cache memory" (an OOM launch) included. It lives here, below both:
the engines layer may import the memory layer, never the other way round.

Each pattern, with its groups:

``version``
    ``vLLM API server version 0.10.1.1``, ``Initializing a V1 LLM engine (v0.10.1.1)`` (``an
    LLM engine`` before V1), the banner's ``█ version 0.32.0``: (1) the version.
``weights_gib``
    ``Model loading took[:] 14.99 GiB [memory] [and 5.24 seconds]`` and the legacy
    ``Loading model weights took 14.99 GB`` (GiB despite the unit: vLLM divided by 2**30):
    (1) GiB per GPU, (2) seconds when printed.
``kv_budget_gib``
    ``Available KV cache memory: -1.44 GiB``: (1) GiB per GPU, negative when the weights and
    the activation peak left nothing (vLLM then stops with "No available memory…").
``kv_cache_tokens``
    ``GPU KV cache size: 1,192,160 tokens`` (``CPU`` on the CPU build): (1) tokens.
``max_concurrency``
    ``Maximum concurrency for 16,384 tokens per request: 72.76x``: (1) tokens per request,
    (2) requests.
``cuda_graph_s``
    ``Graph capturing finished in 12 secs``: (1) seconds.
``init_engine_s``
    ``init engine (profile, create kv cache, warmup model) took 61.20 seconds``: (1) seconds.
``cuda_graph_estimate_gib``
    ``Estimated CUDA graph memory: 0.64 GiB total`` (the V1 model runner's estimate, which
    vLLM ≥ 0.21 subtracts from the KV budget): (1) GiB.
``actual_usage``
    ``Desired GPU memory utilization is (0.92, 128.62 GiB). Actual usage is 56.88 GiB for
    weight, 2.68 GiB for peak activation, 0.24 GiB for non-torch memory, and 0.8 GiB for
    CUDAGraph memory``: (1) the utilization in force, (2) the GiB it requests, (3) weights,
    (4) peak activation, (5) non-torch memory, (6) the CUDA graphs' actual pool.
``model_runner``
    ``Using V2 Model Runner`` (vLLM ≥ 0.26 on dense models): the model runner, whose profile
    differs (no CUDA-graph estimate, a greedy sampler profile).

Numbers may carry thousands separators; :func:`log_number` reads them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

__all__ = ["VLLM_LOG_PATTERNS", "log_number", "parse_vllm_log"]

VLLM_LOG_PATTERNS: Mapping[str, re.Pattern[str]] = MappingProxyType({
    "version": re.compile(r"(?:vLLM API server version|Initializing an? (?:V1 )?LLM engine \(v"
                          r"|█\s+version)\s*v?(\d+\.\d+[\w.+-]*)"),
    "weights_gib": re.compile(r"(?:Model loading took:?|Loading model weights took) "
                              r"([\d.]+) ?Gi?B(?: memory)?(?: and ([\d.]+) s)?"),
    "kv_budget_gib": re.compile(r"Available KV cache memory: (-?[\d.]+) GiB"),
    "kv_cache_tokens": re.compile(r"KV cache size: ([\d,]+) tokens"),
    "max_concurrency": re.compile(
        r"Maximum concurrency for ([\d,]+) tokens per request: ([\d,.]+)x"),
    "cuda_graph_s": re.compile(r"Graph capturing finished in ([\d.]+) s"),
    "init_engine_s": re.compile(r"init engine \([^)]*\) took ([\d.]+) s"),
    "cuda_graph_estimate_gib": re.compile(r"Estimated CUDA graph memory: ([\d.]+) GiB total"),
    "actual_usage": re.compile(
        r"Desired GPU memory utilization is \(([\d.]+), ([\d.]+) GiB\)\. Actual usage is "
        r"([\d.]+) GiB for weight, ([\d.]+) GiB for peak activation, ([\d.]+) GiB for "
        r"non-torch memory, and (-?[\d.]+) GiB for CUDAGraph memory"),
    "model_runner": re.compile(r"Using (V2) Model Runner"),
})

#: the table's keys the memory comparison reads, and the names it reports them under
_PLAN_KEYS = {"version": "vllm_version", "weights_gib": "weights_gib",
              "kv_budget_gib": "kv_budget_gib", "kv_cache_tokens": "kv_cache_tokens",
              "max_concurrency": "max_concurrency"}


def log_number(text: str) -> float:
    """A number as a log prints it (``1,192,160``, ``-1.44``)."""
    return float(text.replace(",", ""))


def parse_vllm_log(lines: Iterable[str]) -> dict[str, float | int | str]:
    """Pull vLLM's memory lines out of a log: version, weights, KV budget, KV tokens and
    max concurrency (under ``vllm_version``, ``weights_gib``, ``kv_budget_gib``,
    ``kv_cache_tokens``, ``max_concurrency``).

    The first match of each wins (TP workers print the same line once each).
    """
    found: dict[str, float | int | str] = {}
    for line in lines:
        for key, name in _PLAN_KEYS.items():
            if name in found:
                continue
            m = VLLM_LOG_PATTERNS[key].search(line)
            if m is None:
                continue
            if key == "version":
                found[name] = m.group(1).rstrip(".")
            elif key == "kv_cache_tokens":
                found[name] = int(log_number(m.group(1)))
            elif key == "max_concurrency":
                found[name] = log_number(m.group(2))
            else:
                found[name] = log_number(m.group(1))
    return found
