"""What users look for in an engine's log, read out of it; known failures with what to do.

Patterns follow the lines vLLM prints (``GPU KV cache size: N tokens`` — ``CPU KV cache size``
on the CPU build —, ``Maximum concurrency for N tokens per request: X.XXx``, ``Model loading
took X GiB memory and Y seconds``, ``Available KV cache memory: X GiB``, ``Graph capturing
finished in X secs``, ``init engine (...) took X s``) and SGLang's equivalents. Thousands
separators are accepted. Failures are matched anywhere in the log and each carries a hint.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

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


def _num(text: str) -> float:
    return float(text.replace(",", ""))


_FACTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("version", re.compile(r"(?:vLLM API server version|Initializing a V1 LLM engine \(v"
                           r"|█\s+version|sglang version:?|SGLang v)\s*v?(\d+\.\d+[\w.+-]*)")),
    ("kv_cache_tokens", re.compile(r"(?:GPU|CPU|XPU|TPU)? ?KV cache size: ([\d,]+) tokens")),
    ("kv_cache_gib", re.compile(r"Available KV cache memory: ([\d.]+) GiB")),
    ("max_concurrency", re.compile(
        r"Maximum concurrency for ([\d,]+) tokens per request: ([\d,.]+)x")),
    ("model_loading", re.compile(
        r"Model loading took ([\d.]+) GiB(?: memory)? and ([\d.]+) s(?:ec(?:ond)?s?)?")),
    ("cuda_graph_s", re.compile(r"Graph capturing finished in ([\d.]+) s")),
    ("init_engine_s", re.compile(r"init engine \([^)]*\) took ([\d.]+) s")),
    # SGLang
    ("sglang_kv", re.compile(r"KV Cache is allocated\. #tokens: ([\d,]+)")),
)

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


def parse_engine_log(text: str) -> EngineLogFacts:
    """Scan a whole log (any engine) and return what it says."""
    facts = EngineLogFacts()
    for name, pattern in _FACTS:
        for m in pattern.finditer(text):
            if name == "version" and facts.version is None:
                facts.version = m.group(1)
            elif name in ("kv_cache_tokens", "sglang_kv"):
                facts.kv_cache_tokens = int(_num(m.group(1)))
            elif name == "kv_cache_gib":
                facts.kv_cache_gib = _num(m.group(1))
            elif name == "max_concurrency":
                facts.max_concurrency_tokens = int(_num(m.group(1)))
                facts.max_concurrency = _num(m.group(2))
            elif name == "model_loading":
                facts.model_loading_gib = _num(m.group(1))
                facts.model_loading_s = _num(m.group(2))
            elif name == "cuda_graph_s":
                facts.cuda_graph_s = _num(m.group(1))
            elif name == "init_engine_s":
                facts.init_engine_s = _num(m.group(1))
    seen: set[str] = set()
    for line in text.splitlines():
        for name, pattern, hint in _FAILURES:
            if name not in seen and pattern.search(line):
                if name == "module-missing" and "triton_kernels" in line:
                    continue
                seen.add(name)
                facts.failures.append(KnownFailure(name, line.strip()[:300], hint))
    return facts
