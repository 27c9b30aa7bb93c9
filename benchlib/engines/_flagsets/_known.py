"""Known differences: flags that changed name or meaning between an engine's versions, or
that belong to another engine, with what to write instead. The check cites them when such a
flag is refused, so "not a flag" comes with "renamed --spec-draft-n-max in 2026 builds".

Each entry names the flags that replace it, so a test can hold the table to the real flag
sets (the replacements exist, the old flag does not, or is a removed stub).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["KNOWN_DIFFERENCES"]

_SPEC = "--speculative-config '{\"method\": …, \"model\": …, \"num_speculative_tokens\": k}'"
_GONE = "removed in vLLM 0.8 (vllm-project/vllm#15466): --speculative-config"
_DRAFT_MAX = ("renamed --spec-draft-n-max (--spec-ngram-mod-n-max for ngram-mod) in 2026 "
              "builds; older builds know only --draft-max")
_DRAFT_MIN = ("renamed --spec-draft-n-min (--spec-ngram-mod-n-min for ngram-mod) in 2026 "
              "builds")
_LOAD_MODE = ("replaced by -lm/--load-mode auto|none|mmap|mlock|mmap+mlock|dio in 2026 builds "
              "(--no-mmap: --load-mode none)")
#: flags that changed name or meaning between versions, or that belong to another engine:
#: engine → flag → (the flags that replace it, what to write instead)
KNOWN_DIFFERENCES: Mapping[str, Mapping[str, tuple[tuple[str, ...], str]]] = MappingProxyType({
    "vllm": {
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
    },
    "sglang": {
        "--max-model-len": (("--context-length",), "vLLM's name; SGLang's is --context-length "
                            "(the kit passes it from engine.max_model_len)"),
        "--gpu-memory-utilization": (("--mem-fraction-static",),
                                     "vLLM's name; SGLang's is --mem-fraction-static"),
        "--max-num-seqs": (("--max-running-requests",),
                           "vLLM's name; SGLang's is --max-running-requests"),
        "--speculative-model": (("--speculative-draft-model-path",),
                                "SGLang names the draft --speculative-draft-model-path"),
    },
    "llamacpp": {
        **dict.fromkeys(("--draft", "--draft-n", "--draft-max"),
                        (("--spec-draft-n-max",), _DRAFT_MAX)),
        **dict.fromkeys(("--draft-min", "--draft-n-min"), (("--spec-draft-n-min",), _DRAFT_MIN)),
        **dict.fromkeys(("--mmap", "--no-mmap", "--mlock", "--direct-io", "--no-direct-io"),
                        (("--load-mode",), _LOAD_MODE)),
        "--max-model-len": (("--ctx-size",), "vLLM's name; llama-server's is -c/--ctx-size "
                            "(the kit passes it from engine.max_model_len)"),
    },
    "openjet": {
        "--ctx-size": (("--ctx",), "llama-server's name; openjet-engine's is -c/--ctx"),
        "--alias": ((), "openjet-engine has no alias: it serves the model under its file name"),
        "--draft-max": (("--draft",), "llama-server's name; openjet-engine's is -d/--draft N"),
        "--n-gpu-layers": ((), "openjet-engine runs the whole model on the GPU: no layer flag"),
    },
})
