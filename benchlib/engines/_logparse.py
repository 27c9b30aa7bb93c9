"""What users look for in an engine's log, read out of it; known failures with what to do.

vLLM's lines are read with the kit's one table of them,
:data:`benchlib.memory.VLLM_LOG_PATTERNS` (``GPU KV cache size: N tokens`` — ``CPU KV cache
size`` on the CPU build —, ``Maximum concurrency for N tokens per request: X.XXx``, ``Model
loading took X GiB memory and Y seconds``, ``Available KV cache memory: X GiB`` — negative on
an OOM launch —, ``Graph capturing finished in X secs``, ``init engine (...) took X s``), so
the memory plan's comparison and a run's log facts never disagree on a line. SGLang's
equivalents are this module's own. Failures are matched anywhere in the log and each carries
a hint.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from benchlib.memory import VLLM_LOG_PATTERNS, log_number

__all__ = ["EngineLogFacts", "KnownFailure", "parse_engine_log"]


@dataclass(frozen=True, slots=True)
class KnownFailure:
    """A failure recognised in the log: a short name, the line, and what to do about it."""

    name: str
    line: str
    hint: str


@dataclass(slots=True)
class EngineLogFacts:
    """Numbers and failures found in an engine log; ``None`` where the log did not say."""

    version: str | None = None
    kv_cache_tokens: int | None = None
    kv_cache_gib: float | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None
    model_loading_gib: float | None = None
    model_loading_s: float | None = None
    cuda_graph_s: float | None = None
    init_engine_s: float | None = None
    failures: list[KnownFailure] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """The numbers (failures left out), as they go into results and sidecars."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "failures"}


#: SGLang's lines: its version and the KV tokens it allocated
_SGLANG_PATTERNS: Mapping[str, re.Pattern[str]] = MappingProxyType({
    "version": re.compile(r"(?:sglang version:?|SGLang v)\s*v?(\d+\.\d+[\w.+-]*)"),
    "kv_cache_tokens": re.compile(r"KV Cache is allocated\. #tokens: ([\d,]+)"),
})

_FAILURES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("missing-triton-kernels", re.compile(r"No module named 'triton_kernels[\w.]*'"),
     "this vLLM build needs OpenAI's triton_kernels for MXFP4 MoE (gpt-oss, GLM/Kimi MoE): "
     "install the triton_kernels matching the engine's torch/triton, or use a vLLM wheel "
     "that bundles it; pin both in the recipe (engine.version)"),
    ("cuda-oom", re.compile(r"CUDA out of memory|torch\.OutOfMemoryError|OutOfMemoryError"),
     "the weights plus KV cache do not fit: lower --gpu-memory-utilization or "
     "--max-model-len, raise tensor parallelism, or use a quantized checkpoint "
     "(`benchlib plan` shows the memory stack)"),
    ("no-kv-room", re.compile(r"No available memory for the cache blocks|"
                              r"larger than the available KV cache memory"),
     "no memory is left for the KV cache after the weights: reduce --max-model-len, raise "
     "--gpu-memory-utilization, add GPUs (tp) or quantize (`benchlib plan`)"),
    ("address-in-use", re.compile(r"[Aa]ddress already in use"),
     "the port is taken: stop the other server or set engine.port to a free port"),
    ("xid", re.compile(r"\bXid\b.*?\b(\d+)\b"),
     "the GPU driver reported an Xid error: check `dmesg`, power limit and temperature; "
     "the request that triggered it is in the measure log"),
    ("module-missing", re.compile(r"ModuleNotFoundError: No module named '[\w.]+'"),
     "the engine's environment lacks a module: check engine.python points at the right "
     "environment and install what is named"),
)


def _read_facts(facts: EngineLogFacts, key: str, m: re.Match[str]) -> None:
    """Store what the line ``key`` of the table says; a later line overrides an earlier one
    (a restarted engine prints again), except the version, where the first wins."""
    if key == "version":
        if facts.version is None:
            facts.version = m.group(1).rstrip(".")
    elif key == "kv_cache_tokens":
        facts.kv_cache_tokens = int(log_number(m.group(1)))
    elif key == "kv_budget_gib":
        facts.kv_cache_gib = log_number(m.group(1))
    elif key == "max_concurrency":
        facts.max_concurrency_tokens = int(log_number(m.group(1)))
        facts.max_concurrency = log_number(m.group(2))
    elif key == "weights_gib":
        facts.model_loading_gib = log_number(m.group(1))
        facts.model_loading_s = log_number(m.group(2)) if m.group(2) else None
    elif key == "cuda_graph_s":
        facts.cuda_graph_s = log_number(m.group(1))
    elif key == "init_engine_s":
        facts.init_engine_s = log_number(m.group(1))


def parse_engine_log(text: str) -> EngineLogFacts:
    """Scan a whole log (any engine) and return what it says."""
    facts = EngineLogFacts()
    for table in (VLLM_LOG_PATTERNS, _SGLANG_PATTERNS):
        for key, pattern in table.items():
            for m in pattern.finditer(text):
                _read_facts(facts, key, m)
    seen: set[str] = set()
    for line in text.splitlines():
        for name, pattern, hint in _FAILURES:
            if name not in seen and pattern.search(line):
                if name == "module-missing" and "triton_kernels" in line:
                    continue
                seen.add(name)
                facts.failures.append(KnownFailure(name, line.strip()[:300], hint))
    return facts
