"""Memory math that predicts what vLLM reports: weights, KV bytes per token, KV budget, KV
tokens, max concurrency and the decode floor, per GPU, for any Hugging Face config or GGUF.

``plan(PlanConfig(model=..., gpu="H200", tp=8))`` is the whole pipeline; the pieces
(:func:`load_model_config`, :func:`count_params`, :func:`weight_plan`, :func:`kv_layout`,
:func:`kv_capacity`, :func:`decode_floor`) are exported for notebooks that want one step.
:data:`VLLM_LOG_PATTERNS` is the kit's one table of vLLM's startup lines (engines read it too).
:func:`plan_nodes` finds how many nodes of a GPU a model needs at a context and a
concurrency, with pipeline stages splitting the layers (:mod:`._nodes`).
For SGLang recipes (``PlanConfig(sglang_pool=True)``) :func:`sglang_pool` predicts SGLang's own
report, ``max_total_num_tokens`` and the pool's "K size / V size" (:mod:`._sglang`).

Where this layer sits: ``docs/architecture.md``.
"""

from benchlib.memory._arch import (
    LayerKind,
    LinearAttnSpec,
    MLASpec,
    ModelArch,
    MoESpec,
)
from benchlib.memory._arch_read import arch_from_dict
from benchlib.memory._cases import CaseResult, ValidationCase, check_case, load_cases
from benchlib.memory._decode import DecodeFloor, decode_floor, experts_touched
from benchlib.memory._figures import plan_figures
from benchlib.memory._gguf import GGUFInfo, load_gguf
from benchlib.memory._gpus import GPU, GPUS, device_mismatch, entry_for_device, find_gpu
from benchlib.memory._kv import (
    KV_CACHE_DTYPES,
    KVCapacity,
    KVLayout,
    LayerCache,
    kv_capacity,
    kv_layout,
    legacy_token_report,
)
from benchlib.memory._load import load_model_config
from benchlib.memory._nodes import NodeFit, NodePlan, pipeline_fit, plan_nodes, pp_partition
from benchlib.memory._overhead import (
    MEASURED,
    Overhead,
    default_utilization,
    model_runner,
    overhead_model,
)
from benchlib.memory._params import ParamBreakdown, count_params
from benchlib.memory._plan import (
    Plan,
    PlanConfig,
    plan,
    sweep_max_model_len,
)
from benchlib.memory._sglang import (
    SGLANG_LOG_PATTERNS,
    SGLangPool,
    parse_sglang_log,
    sglang_cell_bytes,
    sglang_mem_fraction_default,
    sglang_pool,
    sglang_reserved_mib,
)
from benchlib.memory._sglang_cases import SGLangCaseResult, check_sglang_case
from benchlib.memory._tokens import (
    TEXT_RULES,
    TextRule,
    TextSize,
    TokenCount,
    count_tokens,
    detect_language,
    text_for_tokens,
)
from benchlib.memory._vllm_log import VLLM_LOG_PATTERNS, log_number, parse_vllm_log
from benchlib.memory._weights import WEIGHT_DTYPES, WeightPlan, weight_plan

__all__ = [
    "GPU",
    "GPUS",
    "KV_CACHE_DTYPES",
    "MEASURED",
    "SGLANG_LOG_PATTERNS",
    "TEXT_RULES",
    "VLLM_LOG_PATTERNS",
    "WEIGHT_DTYPES",
    "CaseResult",
    "DecodeFloor",
    "GGUFInfo",
    "KVCapacity",
    "KVLayout",
    "LayerCache",
    "LayerKind",
    "LinearAttnSpec",
    "MLASpec",
    "MoESpec",
    "ModelArch",
    "NodeFit",
    "NodePlan",
    "Overhead",
    "ParamBreakdown",
    "Plan",
    "PlanConfig",
    "SGLangCaseResult",
    "SGLangPool",
    "TextRule",
    "TextSize",
    "TokenCount",
    "ValidationCase",
    "WeightPlan",
    "arch_from_dict",
    "check_case",
    "check_sglang_case",
    "count_params",
    "count_tokens",
    "decode_floor",
    "default_utilization",
    "detect_language",
    "device_mismatch",
    "entry_for_device",
    "experts_touched",
    "find_gpu",
    "kv_capacity",
    "kv_layout",
    "legacy_token_report",
    "load_cases",
    "load_gguf",
    "load_model_config",
    "log_number",
    "model_runner",
    "overhead_model",
    "parse_sglang_log",
    "parse_vllm_log",
    "pipeline_fit",
    "plan",
    "plan_figures",
    "plan_nodes",
    "pp_partition",
    "sglang_cell_bytes",
    "sglang_mem_fraction_default",
    "sglang_pool",
    "sglang_reserved_mib",
    "sweep_max_model_len",
    "text_for_tokens",
    "weight_plan",
]
