"""llama.cpp's structured log lines, read for its adapter
(:meth:`~benchlib.adapters.EngineAdapter.read_log`).

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

import re
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["file_type_name", "read_llamacpp_log"]

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


def read_llamacpp_log(text: str) -> dict[str, object]:
    """llama-server's facts, from its last start in ``text`` (a restart prints again), by
    :class:`~benchlib.engines.EngineLogFacts`' field names (``version`` only where no other
    line gave one)."""
    facts: dict[str, object] = {}
    runs = [m.start() for m in _LLAMACPP_INIT.finditer(text)]
    run = text[runs[-1]:] if runs else text
    load = _LLAMACPP_LOAD.search(run)
    if load is None:
        return facts
    if m := _LLAMACPP_SERVER["build"].search(run):
        facts["build_number"], facts["commit"] = int(m.group(1)), m.group(2)
        facts["version"] = f"b{m.group(1)}"
    if m := _LLAMACPP_SERVER["threads"].search(run):  # the first: the target's
        facts["threads"] = int(m.group(1))
    if m := _LLAMACPP_SERVER["slots"].search(run):
        facts["slots"], facts["slot_context_tokens"] = int(m.group(1)), int(m.group(2))
    # the backend lists its devices as it starts (ggml_cuda_init), each start again
    devices = list(dict.fromkeys(_LLAMACPP_SERVER["device"].findall(text)))
    facts["gpu_devices"] = devices or None
    if m := _LLAMACPP_SERVER["offloaded"].search(run):  # the first: the target's
        facts["gpu_layers_offloaded"] = int(m.group(1))
        facts["gpu_layers_total"] = int(m.group(2))
    draft = _LLAMACPP_DRAFT.search(run, load.start())
    target = _model_facts(run[load.start():draft.start() if draft else len(run)])
    facts["model_file_type"] = str(target["file_type"]) if "file_type" in target else None
    facts["model_loading_gib"] = float(target["gib"]) if "gib" in target else None
    facts["context_tokens"] = int(target["n_ctx"]) if "n_ctx" in target else None
    facts["kv_cache_gib"] = float(target["kv_gib"]) if "kv_gib" in target else None
    facts["kv_cache_tokens"] = int(target["kv_tokens"]) if "kv_tokens" in target else None
    if draft:
        dft = _model_facts(run[draft.start():])
        facts["draft_model_file_type"] = (str(dft["file_type"]) if "file_type" in dft
                                          else None)
        facts["draft_model_gib"] = float(dft["gib"]) if "gib" in dft else None
        facts["draft_kv_cache_gib"] = float(dft["kv_gib"]) if "kv_gib" in dft else None
    loaded = _LLAMACPP_LOADED.search(run, load.start())
    t0, t1 = _seconds(load), _seconds(loaded) if loaded else None
    if t0 is not None and t1 is not None:  # load, the draft and the warm-up included
        facts["model_loading_s"] = round(t1 - t0, 6)
    return facts
