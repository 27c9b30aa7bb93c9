"""llama.cpp: ``llama-server -m X.gguf --alias … -c N --metrics -lv 4`` when
``engine.executable`` is given (``make llamacpp`` builds one into ``.engines/llamacpp/bin/``),
else llama-cpp-python's ``python -m llama_cpp.server --model … --model_alias …``.

* ``-c`` is the whole KV, split over its slots (``-np N``): N slots of ``max_model_len`` each;
  verbosity 4 prints the build, n_ctx and the KV cache (the log facts); ready when
  ``/health`` answers 200 (503 while loading);
* speculative (build ≥ ~9000, where ``--draft-max`` became a stub that fails):
  ``--spec-type draft-simple --spec-draft-model FILE --spec-draft-n-max k`` for a draft model,
  ``ngram-simple`` (``--spec-ngram-simple-size-m k``), ``ngram-cache`` for lookup decoding,
  ``draft-eagle3`` / ``draft-mtp``; ``options`` become ``--key-with-dashes value``
  (``spec_draft_n_min: 1`` → ``--spec-draft-n-min 1``);
* ``/metrics`` (``llama-server --metrics``, sources read and a real scrape of build 11312 with
  a draft model): it streams one event per token, so chunks say nothing about acceptance;
* its flag set: ``llama-server --help``, versioned by build number, not ``engine.version``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from benchlib.adapters._base import CrashHint, EngineAdapter, LaunchInputs, slots
from benchlib.adapters._llamacpp_log import read_llamacpp_log
from benchlib.adapters._memory import GIB, MemoryInputs, ReportRow, flag_value, number
from benchlib.adapters._speculative import Speculative
from benchlib.measure import MetricNames, MetricSource

if TYPE_CHECKING:
    from benchlib.memory import Plan

__all__ = ["LLAMACPP"]

#: --cache-type-k values the plan's KV dtypes can size
_KV_DTYPES = {"f16": "fp16", "bf16": "bf16"}
_TYPES = {"draft": "draft-simple", "ngram": "ngram-simple", "lookup": "ngram-cache",
          "eagle3": "draft-eagle3", "mtp": "draft-mtp"}
_K = {"draft": "--spec-draft-n-max", "ngram": "--spec-ngram-simple-size-m",
      "lookup": "--spec-draft-n-max", "eagle3": "--spec-draft-n-max", "mtp": "--spec-draft-n-max"}
_DRAFT_MAX = ("renamed --spec-draft-n-max (--spec-ngram-mod-n-max for ngram-mod) in 2026 "
              "builds; older builds know only --draft-max")
_DRAFT_MIN = ("renamed --spec-draft-n-min (--spec-ngram-mod-n-min for ngram-mod) in 2026 "
              "builds")
_LOAD_MODE = ("replaced by -lm/--load-mode auto|none|mmap|mlock|mmap+mlock|dio in 2026 builds "
              "(--no-mmap: --load-mode none)")
_S = MetricSource


class _Llamacpp(EngineAdapter):
    def command(self, launch: LaunchInputs) -> tuple[list[str], str]:
        name, host, port = launch.served_name, launch.host, str(launch.port)
        if launch.executable is None:
            argv = [launch.interpreter, "-m", "llama_cpp.server", "--model",
                    str(launch.model_path), "--model_alias", name, "--host", host,
                    "--port", port]
            if launch.max_model_len:
                argv += ["--n_ctx", str(launch.max_model_len)]
            return argv, launch.ready_path
        argv = [str(launch.executable), "-m", str(launch.model_path), "--alias", name,
                "--host", host, "--port", port]
        if launch.max_model_len:
            # max_model_len is per request for every engine; llama.cpp's -c is the whole
            # KV, split over its slots (-np N): N slots of max_model_len each
            argv += ["-c", str(launch.max_model_len * slots(launch.args))]
        # /metrics exists only when asked for; verbosity 4 prints the build, n_ctx and the
        # KV cache (the library's lines) for the log facts, and ~25 lines per request
        argv += ["--metrics", "-lv", "4"]
        # /health: 503 while loading, 200 once it can serve
        ready = "/health" if launch.ready_path == "/v1/models" else launch.ready_path
        return argv, ready

    def speculative_args(self, spec: Speculative) -> list[str]:
        if not spec.on:
            return []
        if spec.method not in _TYPES:
            raise self.cannot_speculate(spec)
        out = ["--spec-type", _TYPES[spec.method]]
        if spec.draft_model is not None:
            out += ["--spec-draft-model", str(spec.draft_model)]
        if spec.k is not None:
            out += [_K[spec.method], str(spec.k)]
        for key, value in spec.options.items():
            out += [f"--{key.replace('_', '-')}", str(value)]
        return out


    def read_log(self, text: str) -> dict[str, object]:
        """llama-server's build, slots, devices and each model's lines, target and draft
        (:mod:`._llamacpp_log`)."""
        return read_llamacpp_log(text)

    def memory_settings(self, cfg: dict[str, Any], m: MemoryInputs
                        ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The KV is ``-c`` cells of ``--cache-type-k/v`` over its slots, not a budget: the
        cache type (sized where the plan knows it) and the slots."""
        cfg, extra = dict(cfg), dict[str, Any]()
        cfg.pop("kv_budget_gib", None)
        ctk = flag_value(m.args, "-ctk", "--cache-type-k") or "f16"
        ctv = flag_value(m.args, "-ctv", "--cache-type-v") or "f16"
        extra["cache_type"] = ctk if ctk == ctv else f"{ctk}/{ctv}"
        if ctk == ctv and ctk in _KV_DTYPES:
            cfg["kv_cache_dtype"] = _KV_DTYPES[ctk]
        extra["slots"] = slots(m.args)
        return cfg, extra

    def memory_rows(self, p: Plan, facts: Mapping[str, Any], m: MemoryInputs,
                    cfg: Mapping[str, Any], extra: dict[str, Any]) -> list[ReportRow]:
        """The weights (the model buffer lines against the GGUF's tensors), the KV cache and
        its cells (``max_model_len`` × slots, as ``-c`` is set); a draft GGUF's weights and
        KV cache too."""
        from benchlib.memory import kv_layout, load_gguf

        cells = p.max_model_len * int(extra["slots"])
        extra["kv_cells"] = cells
        per_token = p.layout.bytes_per_token + p.layout.sliding_bytes_per_token
        sized = "kv_cache_dtype" in cfg
        rows = [ReportRow("weights_gib", p.weights.per_gpu_gib,
                          number(facts.get("model_loading_gib")),
                          "log: load_tensors: … model buffer size = X MiB (summed)"),
                ReportRow("kv_cache_gib", cells * per_token / GIB if sized else None,
                          number(facts.get("kv_cache_gib")), "log: llama_kv_cache: size = X MiB"),
                ReportRow("kv_cache_tokens", float(cells), number(facts.get("kv_cache_tokens")),
                          "log: llama_kv_cache: (N cells, …, S/S seqs): cells × streams")]
        draft = m.speculative.draft_model
        if draft is not None and draft.suffix == ".gguf" and draft.is_file():
            info = load_gguf(draft)
            rows.append(ReportRow("draft_weights_gib", info.tensor_bytes / GIB,
                                  number(facts.get("draft_model_gib")),
                                  "log: the draft's model buffer size lines"))
            if sized:  # the draft's own KV: as many cells, its own bytes per token
                layout = kv_layout(info.arch, kv_cache_dtype=str(cfg["kv_cache_dtype"]))
                rows.append(ReportRow("draft_kv_cache_gib", cells * (
                    layout.bytes_per_token + layout.sliding_bytes_per_token) / GIB,
                    number(facts.get("draft_kv_cache_gib")),
                    "log: the draft's llama_kv_cache: size = X MiB"))
        return rows

LLAMACPP = _Llamacpp(
    kit_flags=MappingProxyType({
        "-m": "model", "--alias": "model.served_name", "--host": "engine.host",
        "--port": "engine.port", "-c": "engine.max_model_len"}),
    name="llamacpp", label="llama.cpp", distributions=("llama_cpp_python", "llama-cpp-python"),
    prefix_block_default=(1, "llama.cpp: a slot reuses its last prompt's tokens, token by token"),
    crash_hints=(
        CrashHint("removed-argument", re.compile(r"the argument has been removed\."),
                  "this llama.cpp build renamed the flag: use the one the message names "
                  "(b11312: --draft-max → --spec-draft-n-max, --draft-min → "
                  "--spec-draft-n-min; a draft model also needs --spec-type draft-simple, or "
                  "it is loaded and never used)"),
        CrashHint("model-load-failed", re.compile(r"failed to load (?:draft )?model, '|"
                                                  r"exiting due to model loading error"),
                  "llama-server could not load the GGUF: check the path, that the file is "
                  "whole, and that this build knows its architecture (engine.commit)"),
    ),
    metrics=MetricNames(
        "llamacpp", MappingProxyType({
        "prompt_tokens": _S(("llamacpp:prompt_tokens_total",)),
        "generation_tokens": _S(("llamacpp:tokens_predicted_total",)),
        "prefix_cache_hits": _S(("llamacpp:prompt_tokens_cached_total",)),
        "engine_steps": _S(("llamacpp:n_decode_total",)),
        "spec_drafts": _S(("llamacpp:spec_decode_num_drafts_total",)),
        "spec_draft_tokens": _S(("llamacpp:spec_decode_num_draft_tokens_total",)),
        "spec_accepted_tokens": _S(("llamacpp:spec_decode_num_accepted_tokens_total",)),
        "spec_accepted_per_position": _S(
            ("llamacpp:spec_decode_num_accepted_tokens_per_pos_total",), by_label="position",
            zero_when_absent=True),
        "kv_cache_usage": _S(("llamacpp:kv_cache_usage_ratio",), combine="max"),
        "requests_running": _S(("llamacpp:requests_processing",)),
        "requests_waiting": _S(("llamacpp:requests_deferred",)),
        # typed counter by 2025 builds, so the parser adds _total
        "busy_slots_per_decode": _S(("llamacpp:n_busy_slots_per_decode",
                                     "llamacpp:n_busy_slots_per_decode_total"), combine="max"),
    }), verified=True,
        # verified on llama-server build 11312 (draft-simple, k=4): 128 text events for 128
        # tokens while 97 of 120 draft tokens were accepted in 31 decode calls
        step_chunks="llama-server streams one event per token (process_token for each "
                    "accepted id), whatever was accepted: its chunks say nothing about "
                    "acceptance"),
    plan_comparison="n_ctx",
    speculative_flags=frozenset({"-md", "--model-draft", "--spec-draft-model", "--spec-type",
                                 "--spec-draft-n-max"}),
    flag_differences=MappingProxyType({
        **dict.fromkeys(("--draft", "--draft-n", "--draft-max"),
                        (("--spec-draft-n-max",), _DRAFT_MAX)),
        **dict.fromkeys(("--draft-min", "--draft-n-min"), (("--spec-draft-n-min",), _DRAFT_MIN)),
        **dict.fromkeys(("--mmap", "--no-mmap", "--mlock", "--direct-io", "--no-direct-io"),
                        (("--load-mode",), _LOAD_MODE)),
        "--max-model-len": (("--ctx-size",), "vLLM's name; llama-server's is -c/--ctx-size "
                            "(the kit passes it from engine.max_model_len)"),
    }),
    same_setting=(frozenset({"-md", "--model-draft", "--spec-draft-model"}),),
    flag_versions_comparable=False, flag_source="help",
    no_flag_set="llama-cpp-python's server; give engine.executable (llama-server)",
)
