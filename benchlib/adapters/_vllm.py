"""vLLM: ``python -m vllm.entrypoints.openai.api_server --model … --served-model-name …`` (the
``vllm`` console script of some builds is broken; the module always works), with
``--tokenizer`` for ``model.tokenizer`` and ``--load-format dummy`` for dummy weights.

* parallel: ``--tensor-parallel-size T --pipeline-parallel-size P
  [--distributed-executor-backend B]``; several nodes: :mod:`benchlib.engines._cluster`;
* speculative: ``--speculative-config '{"method": …, "num_speculative_tokens": k, "model":
  …}'`` (the one flag vLLM ≥ 0.10 takes; ``--speculative-model`` / ``--num-speculative-tokens``
  are gone), ``options`` merged into the JSON (``prompt_lookup_max`` …);
* ``/metrics`` (vLLM 0.32: ``vllm/v1/metrics/loggers.py``, ``vllm/v1/spec_decode/metrics.py``,
  read in the installed build): one chunk per engine step;
* the memory plan: its KV blocks compared with the log's (``vllm:cache_config_info``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from benchlib.adapters._base import CrashHint, EngineAdapter, LaunchInputs, ParallelSizes
from benchlib.adapters._memory import (
    GIB,
    MemoryInputs,
    ReportRow,
    flag_value,
    label_int,
    number,
)
from benchlib.adapters._speculative import Speculative
from benchlib.measure import MetricNames, MetricSource
from benchlib.memory import VLLM_LOG_PATTERNS

if TYPE_CHECKING:
    from benchlib.memory import Plan

__all__ = ["VLLM", "VLLM_PARSER"]

#: vLLM's serve parser, as ``vllm.entrypoints.openai.api_server`` builds it (0.32's module
#: paths first, older releases' after)
VLLM_PARSER = """
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
try:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
except ImportError:
    from vllm.entrypoints.openai.cli_args import make_arg_parser
parser = make_arg_parser(FlexibleArgumentParser())
"""

_METHODS = {"ngram": "ngram", "draft": "draft_model", "eagle": "eagle", "eagle3": "eagle3",
            "mtp": "mtp", "suffix": "suffix", "dflash": "dflash"}
_SPEC = "--speculative-config '{\"method\": …, \"model\": …, \"num_speculative_tokens\": k}'"
_GONE = "removed in vLLM 0.8 (vllm-project/vllm#15466): --speculative-config"
#: vLLM's CPU build: ``Explicitly set (1.0/13.96) GiB for KV cache on node 0``
_CPU_KV_SPACE = re.compile(r"Explicitly set \(([\d.]+)/[\d.]+\) GiB for KV cache")
#: the flags the plan follows: PlanConfig setting → (the flags, their type)
_PLAN_FLAGS: tuple[tuple[str, tuple[str, ...], type], ...] = (
    ("kv_cache_dtype", ("--kv-cache-dtype",), str),
    ("block_size", ("--block-size",), int),
    ("gpu_memory_utilization", ("--gpu-memory-utilization",), float),
    ("tp", ("--tensor-parallel-size", "-tp"), int),
    ("max_num_seqs", ("--max-num-seqs",), int),
    ("max_num_batched_tokens", ("--max-num-batched-tokens",), int),
    ("quantization", ("--quantization", "-q"), str))
_S = MetricSource


def model_files(tokenizer_flag: str, launch: LaunchInputs) -> list[str]:
    """vLLM's and SGLang's flags for the model's own tokenizer folder and dummy weights."""
    out = [tokenizer_flag, str(launch.tokenizer)] if launch.tokenizer is not None else []
    return out + (["--load-format", "dummy"] if launch.dummy_weights else [])


class _Vllm(EngineAdapter):
    def command(self, launch: LaunchInputs) -> tuple[list[str], str]:
        argv = [launch.interpreter, "-m", "vllm.entrypoints.openai.api_server",
                "--model", str(launch.model_path), "--served-model-name", launch.served_name,
                "--host", launch.host, "--port", str(launch.port)]
        if launch.max_model_len:
            argv += ["--max-model-len", str(launch.max_model_len)]
        return argv + model_files("--tokenizer", launch), launch.ready_path

    def parallel_args(self, par: ParallelSizes | None) -> list[str]:
        """The sizes always, so the command says them, and the executor backend when the
        recipe names one (vLLM picks mp on one node by itself)."""
        if par is None:
            return []
        out = ["--tensor-parallel-size", str(par.tp), "--pipeline-parallel-size", str(par.pp)]
        return out + (["--distributed-executor-backend", par.backend] if par.backend else [])

    def headless_argv(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        """``--headless`` (no API on this node) is read only by the ``vllm serve`` entry
        point: ``python -m vllm.entrypoints.cli.main serve`` with the same flags."""
        return (argv[0], "-m", "vllm.entrypoints.cli.main", "serve", *argv[3:])

    def speculative_args(self, spec: Speculative) -> list[str]:
        if not spec.on:
            return []
        if spec.method not in _METHODS:
            raise self.cannot_speculate(spec)
        config: dict[str, object] = {"method": _METHODS[spec.method]}
        if spec.k is not None:
            config["num_speculative_tokens"] = spec.k
        if spec.draft_model is not None:
            config["model"] = str(spec.draft_model)
        config.update(spec.options)
        return ["--speculative-config", json.dumps(config, separators=(",", ":"))]


    def memory_settings(self, cfg: dict[str, Any], m: MemoryInputs
                        ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The KV budget from ``--gpu-memory-utilization`` (else this version's default,
        not the recipe's plan setting, which sizes 00_plan), the flags the plan follows,
        the speculation and its drafter, ``--language-model-only``, ``--enforce-eager`` (no
        CUDA-graph estimate), ``/metrics``' block size and the CPU build's KV space."""
        cfg, extra = dict(cfg), dict[str, Any]()
        cfg.pop("gpu_memory_utilization", None)
        if m.version:
            cfg["vllm_version"] = m.version
        spec = m.speculative
        if spec.on:
            cfg["speculative"] = spec.method
            if spec.draft_model is not None and (spec.draft_model / "config.json").is_file():
                cfg["draft_model"] = spec.draft_model
            if spec.k is not None:
                cfg["num_speculative_tokens"] = spec.k
        if "--language-model-only" in m.args:  # no vision/audio tower built
            cfg["language_model_only"] = True
        if m.tp is not None:  # the kit passes --tensor-parallel-size from engine.parallel
            cfg["tp"] = m.tp
        for key, flags, kind in _PLAN_FLAGS:
            value = flag_value(m.args, *flags)
            if value is not None:
                cfg[key] = kind(value)
        if "--enforce-eager" in m.args:  # nothing captured: no CUDA-graph estimate
            cfg["cuda_graphs"] = False
        reported = label_int(m.cache_config, "block_size")
        if reported:  # the engine's own word, kept apart from what the plan uses
            source = "/metrics vllm:cache_config_info{block_size}"
            extra["cache_block_reported"], extra["cache_block_from"] = reported, source
            if "block_size" not in cfg:
                cfg["block_size"], extra["block_size_from"] = reported, source
        space = m.env.get("VLLM_CPU_KVCACHE_SPACE")
        if space is not None:
            cfg["kv_budget_gib"] = float(space)
            extra["kv_budget_from"] = "engine.env VLLM_CPU_KVCACHE_SPACE"
        return cfg, extra

    def memory_rows(self, p: Plan, facts: Mapping[str, Any], m: MemoryInputs,
                    cfg: Mapping[str, Any], extra: dict[str, Any]) -> list[ReportRow]:
        """Weights, KV budget, tokens and blocks, then vLLM's own breakdown of the overhead
        ("Actual usage is …", "Estimated CUDA graph memory") part by part."""
        extra["block_size"] = p.layout.block_size
        rows = [ReportRow("weights_gib", p.weights.per_gpu_gib,
                          number(facts.get("model_loading_gib")),
                          "log: Model loading took X GiB")]
        budget, source = number(facts.get("kv_cache_gib")), "log: Available KV cache memory"
        if budget is None and label_int(m.cache_config, "kv_cache_memory_bytes"):
            budget = (label_int(m.cache_config, "kv_cache_memory_bytes") or 0) / GIB
            source = "/metrics vllm:cache_config_info{kv_cache_memory_bytes}"
        if budget is None and (found := _CPU_KV_SPACE.search(m.log_text)):
            budget, source = float(found.group(1)), "log: Explicitly set (X/…) GiB for KV cache"
        rows += [ReportRow("kv_budget_gib", p.kv_budget_gib, budget, source),
                 ReportRow("kv_cache_tokens", number(p.kv_cache_tokens),
                           number(facts.get("kv_cache_tokens")), "log: KV cache size: N tokens"),
                 ReportRow("kv_blocks", float(p.capacity.num_blocks) if p.capacity else None,
                           number(label_int(m.cache_config, "num_gpu_blocks")),
                           "/metrics vllm:cache_config_info{num_gpu_blocks}")]
        if p.overhead.runner == "legacy" or p.kv_budget_gib is None:
            return rows
        usage = "log: Desired GPU memory utilization … Actual usage is …"
        o, kv = p.overhead, p.kv_budget_gib
        graphs = number(facts.get("cuda_graph_estimate_gib"))
        return [*rows,
                ReportRow("gpu_memory_utilization", p.config.utilization,
                          number(facts.get("gpu_memory_utilization")), usage),
                ReportRow("activation_peak_gib", o.activation_gib,
                          number(facts.get("activation_peak_gib")), usage, kv),
                ReportRow("non_torch_gib", o.non_torch_gib, number(facts.get("non_torch_gib")),
                          usage, kv),
                ReportRow("cuda_graph_estimate_gib", o.cuda_graph_gib,
                          graphs if o.runner == "v1" or graphs is not None else 0.0,
                          "log: Estimated CUDA graph memory (V1 model runner; none on V2)",
                          kv)]

VLLM = _Vllm(
    kit_flags=MappingProxyType({
        "--model": "model", "--served-model-name": "model.served_name", "--host": "engine.host",
        "--port": "engine.port", "--max-model-len": "engine.max_model_len",
        "--tensor-parallel-size": "engine.parallel.tp",
        "--pipeline-parallel-size": "engine.parallel.pp",
        "--distributed-executor-backend": "engine.parallel.backend",
        "--nnodes": "hardware.nodes", "--node-rank": "hardware.nodes",
        "--master-addr": "engine.parallel.head", "--master-port": "engine.parallel.init_port",
        "--tokenizer": "model.tokenizer", "--load-format": "model.weights"}),
    name="vllm", label="vLLM", dummy_weights=True, parallel=True, executor_backend=True,
    multi_node=True, takes_python=True, python_program=True, distributions=("vllm", "vllm-cpu"),
    # the kit's one table of its startup lines, shared with the memory plan's comparison
    log_patterns=VLLM_LOG_PATTERNS,
    crash_hints=(CrashHint(
        "missing-triton-kernels", re.compile(r"No module named 'triton_kernels[\w.]*'"),
        "this vLLM build needs OpenAI's triton_kernels for MXFP4 MoE (gpt-oss, GLM/Kimi MoE): "
        "install the triton_kernels matching the engine's torch/triton, or use a vLLM wheel "
        "that bundles it; pin both in the recipe (engine.version)"),),
    metrics=MetricNames("vllm", MappingProxyType({
        "prompt_tokens": _S(("vllm:prompt_tokens_total",)),
        "generation_tokens": _S(("vllm:generation_tokens_total",)),
        "requests_finished": _S(("vllm:request_success_total",)),
        "preemptions": _S(("vllm:num_preemptions_total",)),
        "prefix_cache_queries": _S(("vllm:prefix_cache_queries_total",)),
        "prefix_cache_hits": _S(("vllm:prefix_cache_hits_total",)),
        "engine_steps": _S(("vllm:iteration_tokens_total_count",)),
        "spec_drafts": _S(("vllm:spec_decode_num_drafts_total",)),
        "spec_draft_tokens": _S(("vllm:spec_decode_num_draft_tokens_total",)),
        "spec_accepted_tokens": _S(("vllm:spec_decode_num_accepted_tokens_total",)),
        "spec_accepted_per_position": _S(("vllm:spec_decode_num_accepted_tokens_per_pos_total",),
                                         by_label="position"),
        # gpu_cache_usage_perc: its name before vLLM 0.10
        "kv_cache_usage": _S(("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
                             combine="max"),
        "requests_running": _S(("vllm:num_requests_running",)),
        "requests_waiting": _S(("vllm:num_requests_waiting",)),
    }), verified=True),
    plan_comparison="kv_blocks", reports_cache_config=True,
    prefix_block_flags=("--block-size", "--block_size"),
    prefix_block_default=(16, "vLLM's GPU default --block-size; its CPU build's is 128, read "
                              "from /metrics at the run"),
    speculative_flags=frozenset({"--speculative-config", "--speculative_config", "-sc",
                                 "--spec-method", "--spec-model", "--spec-tokens"}),
    flag_differences=MappingProxyType({
        "--speculative-model": (("--speculative-config", "--spec-model"),
                                f"removed in vLLM 0.8 (vllm-project/vllm#15466): {_SPEC}, "
                                "or --spec-model"),
        "--num-speculative-tokens": (("--speculative-config", "--spec-tokens"),
                                     f"{_GONE} '{{\"num_speculative_tokens\": k}}', "
                                     "or --spec-tokens"),
        "--speculative-draft-tensor-parallel-size": (
            ("--speculative-config",), f"{_GONE} '{{\"draft_tensor_parallel_size\": n}}'"),
        "--ngram-prompt-lookup-max": (
            ("--speculative-config",),
            f"{_GONE} '{{\"method\": \"ngram\", \"prompt_lookup_max\": n}}'"),
        "--ngram-prompt-lookup-min": (
            ("--speculative-config",),
            f"{_GONE} '{{\"method\": \"ngram\", \"prompt_lookup_min\": n}}'"),
        "--disable-log-requests": (("--enable-log-requests",), "deprecated in vLLM 0.10, "
                                   "since removed: requests are logged only with "
                                   "--enable-log-requests"),
        "--context-length": (("--max-model-len",), "SGLang's name; vLLM's is --max-model-len "
                             "(the kit passes it from engine.max_model_len)"),
        "--mem-fraction-static": (("--gpu-memory-utilization",),
                                  "SGLang's name; vLLM's is --gpu-memory-utilization"),
        "--tp-size": (("--tensor-parallel-size",),
                      "SGLang's name; vLLM's is --tensor-parallel-size (-tp)"),
    }),
    same_setting=(frozenset({"--speculative-config", "--spec-method", "--spec-model",
                             "--spec-tokens"}),),
    flag_source="parser", flag_parser=VLLM_PARSER, flag_parser_note=" (make_arg_parser)",
    flexible_flags=True,
    flag_tool="tools/vllm_flags.py {version}",
)
