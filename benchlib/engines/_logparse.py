"""What users look for in an engine's log, read out of it; known failures with what to do.

vLLM's lines are read with the kit's one table of them,
:data:`benchlib.memory.VLLM_LOG_PATTERNS` (``GPU KV cache size: N tokens`` — ``CPU KV cache
size`` on the CPU build —, ``Maximum concurrency for N tokens per request: X.XXx``, ``Model
loading took X GiB memory and Y seconds``, ``Available KV cache memory: X GiB`` — negative on
an OOM launch —, ``Graph capturing finished in X secs``, ``init engine (...) took X s``), so
the memory plan's comparison and a run's log facts never disagree on a line; each engine's
adapter holds its table (``log_patterns``: vLLM's is that one, SGLang's its own) and the
failures only it prints (``crash_hints``), and :func:`parse_engine_log` reads a log with every
adapter's (a log says which engine wrote it). llama.cpp's structured lines are read here
(:func:`_read_llamacpp`). Failures are matched anywhere in the log and each carries a hint.

llama.cpp (``llama-server`` b11312, lines as its sources print them): at the default verbosity
it says ``load_model: loading model 'X'``, ``llama threadpool init, n_threads = N``,
``loading draft model 'Y'``, ``load_model: initializing, n_slots = N, n_ctx_slot = M`` and
``llama_server: model loaded``, each after an elapsed-time stamp (``0.00.779.696 I …``:
minutes.seconds.milliseconds.microseconds). The library's own lines are printed only from
verbosity 4 (``-lv 4``, which :func:`~benchlib.engines.plan_launch` passes):
``common_params_print_info: build 11312 (0c1e570) …``, ``system_info: n_threads = N …``,
``print_info: file type   = F16``, ``load_tensors:   CPU_Mapped model buffer size =  8.51
MiB``, ``llama_context: n_ctx = 2048`` and ``llama_kv_cache: size = 4.00 MiB (1024 cells,
4 layers, 2/2 seqs) …`` — whose cells are per stream (``n_seq_max/n_stream``), so the KV
tokens are cells × streams. A draft model's lines follow ``loading draft model`` and are
read as the draft's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

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


#: llama.cpp's lines (see the module's docstring); the stamp is the log's elapsed time
_STAMP = r"(?:^|\n)(?:(\d+)\.(\d+)\.(\d+)\.(\d+) \w )?"
_LLAMACPP_INIT = re.compile(r"llama_server: initializing")
_LLAMACPP_LOAD = re.compile(_STAMP + r"[^\n]*load_model: loading model '")
_LLAMACPP_DRAFT = re.compile(r"loading draft model '")
_LLAMACPP_LOADED = re.compile(_STAMP + r"[^\n]*llama_server: model loaded")
_LLAMACPP_SERVER: Mapping[str, re.Pattern[str]] = MappingProxyType({
    "build": re.compile(r"common_params_print_info: build (\d+) \(([0-9a-f]+)\)"),
    "threads": re.compile(r"(?:system_info:|llama threadpool init,) n_threads = (\d+)"),
    "slots": re.compile(r"load_model: initializing, n_slots = (\d+), n_ctx_slot = (\d+)"),
    "device": re.compile(r"^(?:[\d.]+ \w )?\s*Device \d+: ([^,\n]+, compute capability "
                         r"[\d.]+)", re.M),
    "offloaded": re.compile(r"load_tensors: offloaded (\d+)/(\d+) layers to GPU"),
})
_LLAMACPP_MODEL: Mapping[str, re.Pattern[str]] = MappingProxyType({
    "file_type": re.compile(r"print_info: file type\s+= ([^\n]+)"),
    "buffer_mib": re.compile(r"load_tensors:\s+\S+ model buffer size =\s+([\d.]+) MiB"),
    "n_ctx": re.compile(r"llama_context: n_ctx\s+= (\d+)"),
    "kv": re.compile(r"llama_kv_cache: size =\s+([\d.]+) MiB \(\s*(\d+) cells,\s+\d+ "
                     r"layers,\s+\d+/(\d+) seqs\)"),
})

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


def _seconds(m: re.Match[str]) -> float | None:
    """The elapsed-time stamp in front of a llama.cpp line (None: stamps were off)."""
    if m.group(1) is None:
        return None
    minutes, secs, ms, us = (int(g) for g in m.groups()[:4])
    return minutes * 60 + secs + ms / 1e3 + us / 1e6


#: llama.cpp's size words for K-quants (``Q4_K - Medium``), as GGUF's file type names end
_K_SIZES = {"Small": "_S", "Medium": "_M", "Large": "_L"}


def file_type_name(printed: str) -> str:
    """llama.cpp's ``file type`` as GGUF's file type names write it (and the memory plan's
    ``gguf Q4_K_M``): ``Q4_K - Medium`` → ``Q4_K_M``, ``IQ2_XXS - 2.0625 bpw`` → ``IQ2_XXS``,
    ``BF16`` → ``BF16``; Q2_K's medium is plain ``Q2_K``."""
    base, _, rest = printed.strip().partition(" - ")
    size = _K_SIZES.get(rest.strip(), "")
    return base if base == "Q2_K" and size == "_M" else base + size


def _model_facts(text: str) -> dict[str, float | int | str]:
    """One model's lines (target or draft): file type, weights GiB, n_ctx, KV cache."""
    out: dict[str, float | int | str] = {}
    if m := _LLAMACPP_MODEL["file_type"].search(text):
        out["file_type"] = file_type_name(m.group(1))
    buffers = [float(b) for b in _LLAMACPP_MODEL["buffer_mib"].findall(text)]
    if buffers:
        out["gib"] = sum(buffers) / 1024
    if m := _LLAMACPP_MODEL["n_ctx"].search(text):
        out["n_ctx"] = int(m.group(1))
    if m := _LLAMACPP_MODEL["kv"].search(text):
        out["kv_gib"] = float(m.group(1)) / 1024
        out["kv_tokens"] = int(m.group(2)) * int(m.group(3))
    return out


def _read_llamacpp(facts: EngineLogFacts, text: str) -> None:
    """llama-server's facts, from its last start in ``text`` (a restart prints again)."""
    runs = [m.start() for m in _LLAMACPP_INIT.finditer(text)]
    run = text[runs[-1]:] if runs else text
    load = _LLAMACPP_LOAD.search(run)
    if load is None:
        return
    if m := _LLAMACPP_SERVER["build"].search(run):
        facts.build_number, facts.commit = int(m.group(1)), m.group(2)
        facts.version = facts.version or f"b{m.group(1)}"
    if m := _LLAMACPP_SERVER["threads"].search(run):  # the first: the target's
        facts.threads = int(m.group(1))
    if m := _LLAMACPP_SERVER["slots"].search(run):
        facts.slots, facts.slot_context_tokens = int(m.group(1)), int(m.group(2))
    # the backend lists its devices as it starts (ggml_cuda_init), each start again
    devices = list(dict.fromkeys(_LLAMACPP_SERVER["device"].findall(text)))
    facts.gpu_devices = devices or None
    if m := _LLAMACPP_SERVER["offloaded"].search(run):  # the first: the target's
        facts.gpu_layers_offloaded, facts.gpu_layers_total = int(m.group(1)), int(m.group(2))
    draft = _LLAMACPP_DRAFT.search(run, load.start())
    target = _model_facts(run[load.start():draft.start() if draft else len(run)])
    facts.model_file_type = str(target["file_type"]) if "file_type" in target else None
    facts.model_loading_gib = float(target["gib"]) if "gib" in target else None
    facts.context_tokens = int(target["n_ctx"]) if "n_ctx" in target else None
    facts.kv_cache_gib = float(target["kv_gib"]) if "kv_gib" in target else None
    facts.kv_cache_tokens = int(target["kv_tokens"]) if "kv_tokens" in target else None
    if draft:
        dft = _model_facts(run[draft.start():])
        facts.draft_model_file_type = str(dft["file_type"]) if "file_type" in dft else None
        facts.draft_model_gib = float(dft["gib"]) if "gib" in dft else None
        facts.draft_kv_cache_gib = float(dft["kv_gib"]) if "kv_gib" in dft else None
    loaded = _LLAMACPP_LOADED.search(run, load.start())
    t0, t1 = _seconds(load), _seconds(loaded) if loaded else None
    if t0 is not None and t1 is not None:  # load, the draft and the warm-up included
        facts.model_loading_s = round(t1 - t0, 6)


def parse_engine_log(text: str) -> EngineLogFacts:
    """Scan a whole log (any engine) and return what it says."""
    facts = EngineLogFacts()
    for table in (a.log_patterns for a in ADAPTERS.values()):
        for key, pattern in table.items():
            for m in pattern.finditer(text):
                _read_facts(facts, key, m)
    _read_llamacpp(facts, text)
    seen: set[str] = set()
    for line in text.splitlines():
        for name, pattern, hint in _ALL_FAILURES:
            if name not in seen and pattern.search(line):
                if name == "module-missing" and "triton_kernels" in line:
                    continue
                seen.add(name)
                facts.failures.append(KnownFailure(name, line.strip()[:300], hint))
    return facts
