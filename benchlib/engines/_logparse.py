"""What users look for in an engine's log, read out of it; known failures with what to do.

vLLM's lines are read with the kit's one table of them,
:data:`benchlib.memory.VLLM_LOG_PATTERNS` (``GPU KV cache size: N tokens`` — ``CPU KV cache
size`` on the CPU build —, ``Maximum concurrency for N tokens per request: X.XXx``, ``Model
loading took X GiB memory and Y seconds``, ``Available KV cache memory: X GiB`` — negative on
an OOM launch —, ``Graph capturing finished in X secs``, ``init engine (...) took X s``), so
the memory plan's comparison and a run's log facts never disagree on a line; each engine's
adapter holds its table (``log_patterns``: vLLM's is that one, SGLang's its own) and the
failures only it prints (``crash_hints``), and :func:`parse_engine_log` reads a log with every
adapter's (a log says which engine wrote it). Lines only one engine prints in a structure of
its own (llama.cpp's, a target's and a draft's in turn) are its adapter's to read
(:meth:`~benchlib.adapters.EngineAdapter.read_log`). Failures are matched anywhere in the log
and each carries a hint.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from benchlib.adapters import ADAPTERS
from benchlib.memory import log_number

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
    #: vLLM's own breakdown ("Desired GPU memory utilization is (U, R GiB). Actual usage
    #: is …"): the utilization in force, and each part it reserved besides the KV cache
    gpu_memory_utilization: float | None = None
    requested_gib: float | None = None
    activation_peak_gib: float | None = None
    non_torch_gib: float | None = None
    cuda_graph_gib: float | None = None
    #: what the V1 model runner's CUDA-graph estimate took off the KV budget
    cuda_graph_estimate_gib: float | None = None
    #: "v2" when vLLM said it used its V2 model runner
    model_runner: str | None = None
    #: llama.cpp: release number and commit (``build 11312 (0c1e570)``; version ``b11312``)
    build_number: int | None = None
    commit: str | None = None
    #: llama.cpp: context of the whole server (n_ctx), its slots and each slot's context
    context_tokens: int | None = None
    slots: int | None = None
    slot_context_tokens: int | None = None
    threads: int | None = None
    model_file_type: str | None = None
    draft_model_file_type: str | None = None
    draft_model_gib: float | None = None
    draft_kv_cache_gib: float | None = None
    #: llama.cpp's GPU backend: the devices it found (``NVIDIA H200, compute capability
    #: 9.0``) and the layers it offloaded of those it could (``-ngl``)
    gpu_devices: list[str] | None = None
    gpu_layers_offloaded: int | None = None
    gpu_layers_total: int | None = None
    failures: list[KnownFailure] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """The numbers (failures left out), as they go into results and sidecars."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "failures"}


#: failures any engine can print (each engine's own are its adapter's ``crash_hints``)
_FAILURES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("cuda-oom", re.compile(r"CUDA out of memory|torch\.OutOfMemoryError|OutOfMemoryError|"
                            r"cudaMalloc failed: out of memory"),
     "the weights plus KV cache do not fit: lower --gpu-memory-utilization or "
     "--max-model-len, raise tensor parallelism, or use a quantized checkpoint "
     "(`benchlib plan` shows the memory stack)"),
    ("no-kv-room", re.compile(r"No available memory for the cache blocks|"
                              r"larger than the available KV cache memory|"
                              r"failed to allocate buffer for kv cache"),
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


#: every engine's failures, then the common ones, as the log is scanned for them
_ALL_FAILURES = (*((h.name, h.pattern, h.hint) for a in ADAPTERS.values() for h in a.crash_hints),
                 *_FAILURES)


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
    elif key == "cuda_graph_estimate_gib":
        facts.cuda_graph_estimate_gib = log_number(m.group(1))
    elif key == "actual_usage":
        (facts.gpu_memory_utilization, facts.requested_gib, _, facts.activation_peak_gib,
         facts.non_torch_gib, facts.cuda_graph_gib) = (log_number(g) for g in m.groups())
    elif key == "model_runner":
        facts.model_runner = m.group(1).lower()


def parse_engine_log(text: str) -> EngineLogFacts:
    """Scan a whole log (any engine) and return what it says."""
    facts = EngineLogFacts()
    for table in (a.log_patterns for a in ADAPTERS.values()):
        for key, pattern in table.items():
            for m in pattern.finditer(text):
                _read_facts(facts, key, m)
    for engine in ADAPTERS.values():  # the structured lines only one engine prints
        for key, value in engine.read_log(text).items():
            if key != "version" or facts.version is None:
                setattr(facts, key, value)
    seen: set[str] = set()
    for line in text.splitlines():
        for name, pattern, hint in _ALL_FAILURES:
            if name not in seen and pattern.search(line):
                if name == "module-missing" and "triton_kernels" in line:
                    continue
                seen.add(name)
                facts.failures.append(KnownFailure(name, line.strip()[:300], hint))
    return facts
