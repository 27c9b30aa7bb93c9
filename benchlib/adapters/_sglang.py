"""SGLang: ``python -m sglang.launch_server --model-path … --served-model-name …`` (still
supported in 0.5.23, which recommends ``sglang serve``; both read the same parser), with
``--tokenizer-path`` for ``model.tokenizer`` and ``--load-format dummy`` for dummy weights.

* parallel: ``--tp-size T --pp-size P``; several nodes join by ``--nnodes``/``--node-rank``/
  ``--dist-init-addr`` (:mod:`benchlib.engines._cluster`), no executor backend;
* speculative: ``--speculative-algorithm`` (NGRAM, EAGLE, EAGLE3, …) with
  ``--speculative-num-draft-tokens`` and ``--speculative-draft-model-path``; ``options``
  become ``--speculative-key-with-dashes value`` (``num_steps: 3`` →
  ``--speculative-num-steps 3``, seed 001's EAGLE settings). A model's own MTP layers are
  SGLang's EAGLE algorithm with no draft path;
* ``/metrics`` (``python/sglang/srt/metrics/collector.py``, read in its repository but never
  run here: not verified);
* the memory plan also predicts SGLang's token pool (``max_total_num_tokens``).
"""

from __future__ import annotations

import re
from types import MappingProxyType

from benchlib.adapters._base import EngineAdapter, LaunchInputs, ParallelSizes
from benchlib.adapters._speculative import Speculative
from benchlib.adapters._vllm import model_files
from benchlib.measure import MetricNames, MetricSource

__all__ = ["SGLANG", "SGLANG_PARSER"]

#: SGLang's parser, as ``sglang.launch_server`` builds it (``prepare_server_args``)
SGLANG_PARSER = """
import argparse
try:
    from sglang.srt.plugins import load_plugins
    load_plugins()
except ImportError:
    pass
from sglang.srt.server_args import ServerArgs
parser = argparse.ArgumentParser(prog="sglang serve")
ServerArgs.add_cli_args(parser)
"""

_METHODS = {"ngram": "NGRAM", "eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "EAGLE"}
_S = MetricSource


class _Sglang(EngineAdapter):
    def command(self, launch: LaunchInputs) -> tuple[list[str], str]:
        argv = [launch.interpreter, "-m", "sglang.launch_server",
                "--model-path", str(launch.model_path), "--served-model-name",
                launch.served_name, "--host", launch.host, "--port", str(launch.port)]
        if launch.max_model_len:
            argv += ["--context-length", str(launch.max_model_len)]
        return argv + model_files("--tokenizer-path", launch), launch.ready_path

    def parallel_args(self, par: ParallelSizes | None) -> list[str]:
        return [] if par is None else ["--tp-size", str(par.tp), "--pp-size", str(par.pp)]

    def speculative_args(self, spec: Speculative) -> list[str]:
        if not spec.on:
            return []
        if spec.method not in _METHODS:
            raise self.cannot_speculate(spec)
        out = ["--speculative-algorithm", _METHODS[spec.method]]
        if spec.k is not None:
            out += ["--speculative-num-draft-tokens", str(spec.k)]
        if spec.draft_model is not None:
            out += ["--speculative-draft-model-path", str(spec.draft_model)]
        for key, value in spec.options.items():
            out += [f"--speculative-{key.replace('_', '-')}", str(value)]
        return out


SGLANG = _Sglang(
    kit_flags=MappingProxyType({
        "--model-path": "model", "--served-model-name": "model.served_name",
        "--host": "engine.host", "--port": "engine.port",
        "--context-length": "engine.max_model_len", "--tp-size": "engine.parallel.tp",
        "--pp-size": "engine.parallel.pp", "--nnodes": "hardware.nodes",
        "--node-rank": "hardware.nodes", "--dist-init-addr": "engine.parallel.head",
        "--tokenizer-path": "model.tokenizer", "--load-format": "model.weights"}),
    name="sglang", label="SGLang", dummy_weights=True, parallel=True, multi_node=True,
    takes_python=True, python_program=True, distributions=("sglang",),
    prefix_block_flags=("--page-size",), refuses_at_context=True,
    prefix_block_default=(1, "SGLang's default --page-size 1: its radix cache matches token by "
                             "token"),
    # its version and the KV tokens it allocated
    log_patterns=MappingProxyType({
        "version": re.compile(r"(?:sglang version:?|SGLang v)\s*v?(\d+\.\d+[\w.+-]*)"),
        "kv_cache_tokens": re.compile(r"KV Cache is allocated\. #tokens: ([\d,]+)"),
    }),
    metrics=MetricNames("sglang", MappingProxyType({
        "prompt_tokens": _S(("sglang:prompt_tokens_total",)),
        "generation_tokens": _S(("sglang:generation_tokens_total",)),
        "requests_finished": _S(("sglang:num_requests_total",)),
        "preemptions": _S(("sglang:num_retracted_requests_total",)),
        "prefix_cache_hits": _S(("sglang:cached_tokens_total",)),
        "kv_cache_usage": _S(("sglang:token_usage",), combine="max"),
        "requests_running": _S(("sglang:num_running_reqs",)),
        "requests_waiting": _S(("sglang:num_queue_reqs",)),
        "spec_accept_length": _S(("sglang:spec_accept_length",), combine="max"),
        "spec_accept_rate": _S(("sglang:spec_accept_rate",), combine="max"),
    }),
                        step_chunks="SGLang's chunks per engine step were not verified here"),
    plan_settings=MappingProxyType({"sglang_pool": True}),
    speculative_flags=frozenset({"--speculative-algorithm", "--speculative-draft-model-path"}),
    flag_source="parser-or-committed", flag_parser=SGLANG_PARSER,
    flag_tool="tools/engine_flags.py sglang {version}",
    flag_differences=MappingProxyType({
        "--max-model-len": (("--context-length",), "vLLM's name; SGLang's is --context-length "
                            "(the kit passes it from engine.max_model_len)"),
        "--gpu-memory-utilization": (("--mem-fraction-static",),
                                     "vLLM's name; SGLang's is --mem-fraction-static"),
        "--max-num-seqs": (("--max-running-requests",),
                           "vLLM's name; SGLang's is --max-running-requests"),
        "--speculative-model": (("--speculative-draft-model-path",),
                                "SGLang names the draft --speculative-draft-model-path"),
    }),
)
