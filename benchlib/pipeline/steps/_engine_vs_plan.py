"""The memory plan against the live engine: what 02_launch's engine says it allocated (its log
lines, its ``/metrics``) beside what the plan predicts for that engine's own settings, with a
difference above :data:`FLAG_PCT` flagged; and, for 03_measure, a scenario's expected KV use
and the engine's prefix-cache unit (:func:`prefix_unit`).

The plan here is computed again for the variant's engine, not taken from 00_plan: the
variant's model file (a GGUF for llama.cpp), its ``max_model_len``, KV cache dtype, block
size and tensor parallelism from the engine's arguments, and its KV budget where the engine
is told one (vLLM's CPU build: ``VLLM_CPU_KVCACHE_SPACE`` GiB) — the recipe's ``plan``
settings (GPU, utilization) fill in the rest.

What is compared is each engine's own business: its adapter says which of its settings change
the plan and which figures it reported (:mod:`benchlib.adapters._memory`; vLLM: the weights,
KV budget, tokens and blocks and its own breakdown of the overhead; llama.cpp: the weights,
the KV cache and its cells, a draft's too). This module plans, sets the figures side by side
and flags them.

A figure either side lacks is shown with ``None`` and never flagged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib._exceptions import BenchlibError
from benchlib.adapters import ADAPTERS, MemoryInputs, adapter
from benchlib.recipe import Recipe, Scenario
from benchlib.runs import FLAG_PCT, EngineVsPlan, KvVsPlan, PlanFigure

if TYPE_CHECKING:
    pass

__all__ = ["FLAG_PCT", "EngineVsPlan", "PlanFigure", "compare_engine_to_plan",
           "flagged_lines", "kv_usage_expected", "prefix_unit"]

_GIB = 1024**3

#: what to do when a figure differs, per figure
_ADVICE = {
    "weights_gib": "the engine loaded other weights than the plan sized: check the "
                   "checkpoint's dtype or quantization against plan.weight_dtype (and the "
                   "engine's --dtype / --quantization)",
    "draft_weights_gib": "the draft loaded other weights than its GGUF holds: check "
                         "speculative.draft_model",
    "draft_kv_cache_gib": "the draft's KV cache is not cells × its bytes per token: check "
                          "the draft's context (--ctx-size-draft) and KV dtype",
    "kv_budget_gib": "the engine's KV budget is not the plan's: give the engine's figure as "
                     "plan.kv_budget_gib, or check gpu_memory_utilization, the GPU and the "
                     "overhead the plan assumed (VLLM_CPU_KVCACHE_SPACE on vLLM's CPU build)",
    "kv_cache_gib": "the KV cache's bytes per token are not the plan's: check the KV dtype "
                    "(--cache-type-k / --cache-type-v) and the model's KV heads and head "
                    "dimension",
    "kv_cache_tokens": "the KV capacity is not the plan's: check the KV dtype "
                       "(--kv-cache-dtype), max_model_len, sliding-window or hybrid layers, "
                       "and the budget; the scenarios' KV use is read against the engine's "
                       "figure",
    "kv_blocks": "the KV blocks are not the plan's: check --block-size and the KV dtype, "
                 "then the budget",
    "gpu_memory_utilization": "the engine ran at another utilization than the plan assumed: "
                              "pass --gpu-memory-utilization in engine.args (the plan follows "
                              "it), or leave both to this vLLM version's default",
    "activation_peak_gib": "vLLM's profile peaked elsewhere than the plan's model of it "
                           "(benchlib/memory/_overhead.py): check max_num_batched_tokens, "
                           "max_num_seqs and the model runner (V1/V2) the log names",
    "non_torch_gib": "the CUDA context grew by another amount than measured on the H200 "
                     "(benchlib.memory.MEASURED): another GPU, driver or parallel layout",
    "cuda_graph_estimate_gib": "vLLM's CUDA-graph estimate (V1 model runner) is not the "
                               "plan's (twice FlashAttention's split buffer plus the residual "
                               "measured on the H200): another attention backend, capture "
                               "sizes or GPU",
}
#: the overhead's parts are flagged by what they move the KV budget by: this share of it
PART_FLAG_SHARE = 0.01
_UNITS = {"weights_gib": "GiB", "draft_weights_gib": "GiB", "draft_kv_cache_gib": "GiB",
          "kv_budget_gib": "GiB", "kv_cache_gib": "GiB", "kv_cache_tokens": "tokens",
          "kv_blocks": "blocks", "gpu_memory_utilization": "fraction",
          "activation_peak_gib": "GiB", "non_torch_gib": "GiB",
          "cuda_graph_estimate_gib": "GiB"}



def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _figure(figure: str, plan: float | None, engine: float | None, source: str,
            budget: float | None = None) -> PlanFigure:
    """One row; ``budget`` (GiB): a part of the overhead, flagged when it moves the KV
    budget by more than :data:`PART_FLAG_SHARE` of it rather than by its own share."""
    diff = None if plan is None or engine is None or plan == 0 else (engine - plan) / plan * 100
    flagged = diff is not None and abs(diff) > FLAG_PCT
    if budget is not None:
        flagged = (plan is not None and engine is not None
                   and abs(engine - plan) > PART_FLAG_SHARE * abs(budget))
    unit = _UNITS[figure]

    def shown(value: float | None) -> int | float | None:  # counts as counts
        return value if value is None or unit in ("GiB", "fraction") else round(value)

    return PlanFigure(figure=figure, unit=unit, plan=shown(plan), engine=shown(engine),
                      source=source, diff_pct=None if diff is None else round(diff, 3),
                      flagged=flagged, advice=_ADVICE[figure] if flagged else "")


def _settings(recipe: Recipe, model: Path, m: MemoryInputs
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PlanConfig settings for this engine (the recipe's plan settings, the model,
    ``max_model_len``, then the engine's own, :meth:`~benchlib.adapters.EngineAdapter.
    memory_settings`), and what else its report needs — both shown in the result."""
    from benchlib.memory import PlanConfig

    fields = set(PlanConfig.model_fields) - {"model", "sglang_pool", "mem_fraction_static"}
    cfg: dict[str, Any] = {k: v for k, v in recipe.plan.items() if k in fields}
    cfg["model"] = model
    if recipe.engine.max_model_len:
        cfg["max_model_len"] = recipe.engine.max_model_len
    return adapter(recipe.engine.kind).memory_settings(cfg, m)


def compare_engine_to_plan(recipe: Recipe, model_path: Path | None,
                           log_facts: Mapping[str, Any], *, log_text: str = "",
                           cache_config: Mapping[str, str] | None = None) -> EngineVsPlan:
    """The plan for this engine's settings beside what it reported (``log_facts``: the
    parsed ``engine.log``; ``cache_config``: vLLM's ``vllm:cache_config_info`` labels)."""
    from benchlib.memory import PlanConfig, plan

    e = recipe.engine
    engine = adapter(e.kind)
    if engine.plan_comparison is None:
        covered = " and ".join(a.label for a in ADAPTERS.values() if a.plan_comparison)
        return EngineVsPlan(skipped=f"engine {e.kind}: the comparison covers {covered}")
    model = model_path or recipe.model.local_path
    if model is None:
        return EngineVsPlan(skipped="no local model to plan from")
    if model.is_dir() and not (model / "config.json").is_file():
        return EngineVsPlan(skipped=f"no config.json in {model}")
    m = MemoryInputs(args=tuple(str(a) for a in e.args), env=dict(e.env),
                     version=str(e.version) if e.version else None, speculative=e.speculative,
                     tp=e.parallel.tp if e.parallel is not None else None,
                     cache_config=dict(cache_config or {}), log_text=log_text)
    cfg, extra = _settings(recipe, model, m)
    shown = {k: str(v) if isinstance(v, Path) else v for k, v in cfg.items()} | extra
    try:  # a model the plan cannot read is said, never a failed launch
        p = plan(PlanConfig(**cfg))
        rows = [_figure(*row) for row in engine.memory_rows(p, log_facts, m, cfg, extra)]
    except (BenchlibError, ValueError, OSError) as exc:
        return EngineVsPlan(settings=shown, skipped=f"the plan failed: {exc}")
    shown |= extra
    shown["kv_bytes_per_token"] = p.layout.bytes_per_token
    return EngineVsPlan(settings=shown, rows=rows)


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "fraction":
        return f"{value:.4g}"
    return f"{value:.4g} {unit}" if unit == "GiB" else f"{value:,.0f} {unit}"


def flagged_lines(result: EngineVsPlan) -> list[str]:
    """One console line per flagged figure: what differs, by how much, what to do."""
    return [f"plan vs engine: {r.figure} differs by {r.diff_pct:+.1f} % (plan "
            f"{_fmt(r.plan, r.unit)}, engine {_fmt(r.engine, r.unit)} from {r.source}): "
            f"{r.advice}" for r in result.rows if r.flagged and r.diff_pct is not None]


def kv_usage_expected(vs: EngineVsPlan, s: Scenario, concurrency: int) -> KvVsPlan | None:
    """What the plan expects a scenario to fill of the KV cache at its peak: ``concurrency``
    requests of input + output tokens (vLLM: whole blocks each) over the plan's capacity;
    ``capacity_flagged``: the engine's capacity itself differs from the plan's. None without
    a plan for the engine (``vs``: 02_launch's plan against the engine); ``peak`` left for
    the caller (the engine's /metrics)."""
    tokens, blocks = vs.row("kv_cache_tokens"), vs.row("kv_blocks")
    capacity = _number(tokens.plan) if tokens else None
    if not capacity:
        return None
    per_request = max([s.input_len, *s.ramp_input_lens]) + s.output_len
    block = int(_number(vs.settings.get("block_size")) or 1)
    planned_blocks = _number(blocks.plan) if blocks else None
    if planned_blocks:  # vLLM: requests hold whole blocks
        expected = concurrency * math.ceil(per_request / block) / planned_blocks
    else:
        expected = concurrency * per_request / capacity
    return KvVsPlan(expected=round(min(expected, 1.0), 6), capacity_tokens=int(capacity),
                    tokens_per_request=per_request,
                    capacity_flagged=any(r.flagged for r in (tokens, blocks) if r))


def prefix_unit(recipe: Recipe, vs: EngineVsPlan | None) -> tuple[int, str] | None:
    """The engine's prefix-cache unit for the shared-prefix share, and where it comes from:
    its flag, the block it reported at 02_launch (``vs``' settings: vLLM's ``/metrics``), its
    default; None where the kit does not know the engine's cache (the unit is then assumed)."""
    return adapter(recipe.engine.kind).prefix_block(recipe.engine.args,
                                                    vs.settings if vs is not None else None)
