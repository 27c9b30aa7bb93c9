"""The memory plan against the live engine: what 02_launch's engine says it allocated (its log
lines, its ``/metrics``) beside what the plan predicts for that engine's own settings, with a
difference above :data:`FLAG_PCT` flagged; and, for 03_measure, a scenario's expected KV use.

The plan here is computed again for the variant's engine, not taken from 00_plan: the
variant's model file (a GGUF for llama.cpp), its ``max_model_len``, KV cache dtype, block
size and tensor parallelism from the engine's arguments, and its KV budget where the engine
is told one (vLLM's CPU build: ``VLLM_CPU_KVCACHE_SPACE`` GiB) — the recipe's ``plan``
settings (GPU, utilization) fill in the rest.

What is compared, per engine:

* vLLM: the weights (``Model loading took X GiB``; the CPU build prints no such line), the KV
  budget (``Available KV cache memory: X GiB``, else ``/metrics``
  ``vllm:cache_config_info{kv_cache_memory_bytes}``, else the CPU build's ``Explicitly set
  (X/Y) GiB for KV cache``), the KV tokens (``KV cache size: N tokens``) and the KV blocks
  (``vllm:cache_config_info{num_gpu_blocks}``, whose ``block_size`` label also sets the
  plan's block size when the recipe does not);
* llama.cpp: the weights (the ``model buffer size`` lines against the GGUF's tensor bytes),
  the KV cache (``llama_kv_cache: size = X MiB (N cells …)`` against cells × the plan's bytes
  per token at ``--cache-type-k``) and its cells (``max_model_len`` × slots, as the launcher
  sets ``-c``); with a draft model, the draft's weights and KV cache too.

A figure either side lacks is shown with ``None`` and never flagged.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib._exceptions import BenchlibError
from benchlib.adapters import ADAPTERS, adapter
from benchlib.recipe import Recipe, Scenario
from benchlib.runs import FLAG_PCT, EngineVsPlan, KvVsPlan, PlanFigure

if TYPE_CHECKING:
    from benchlib.memory import Plan

__all__ = ["FLAG_PCT", "EngineVsPlan", "PlanFigure", "compare_engine_to_plan",
           "flagged_lines", "kv_usage_expected"]

_GIB = 1024**3
#: llama.cpp's --cache-type-k values the plan's KV dtypes can size
_LLAMACPP_KV = {"f16": "fp16", "bf16": "bf16"}
#: vLLM's CPU build: ``Explicitly set (1.0/13.96) GiB for KV cache on node 0``
_CPU_KV_SPACE = re.compile(r"Explicitly set \(([\d.]+)/[\d.]+\) GiB for KV cache")

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
                               "measured one the plan uses: another model class or GPU",
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


def _arg(args: Sequence[str], *flags: str) -> str | None:
    """The value after the last of ``flags`` in ``args`` (``--flag value`` or
    ``--flag=value``)."""
    found = None
    for flag, value in itertools.pairwise([*args, ""]):
        if flag in flags:
            found = value
        elif "=" in flag and flag.split("=", 1)[0] in flags:
            found = flag.split("=", 1)[1]
    return found


def _label_int(labels: Mapping[str, str], key: str) -> int | None:
    value = labels.get(key, "")
    return int(value) if value.isdigit() else None


def _settings(recipe: Recipe, model: Path, cache_config: Mapping[str, str]
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PlanConfig settings for this engine, and what else the comparison needs (slots,
    the KV dtype llama.cpp uses) — both shown in the result."""
    from benchlib.memory import PlanConfig

    e = recipe.engine
    args = [str(a) for a in e.args]
    fields = set(PlanConfig.model_fields) - {"model", "sglang_pool", "mem_fraction_static"}
    cfg: dict[str, Any] = {k: v for k, v in recipe.plan.items() if k in fields}
    cfg["model"] = model
    if e.max_model_len:
        cfg["max_model_len"] = e.max_model_len
    extra: dict[str, Any] = {}
    if adapter(e.kind).plan_comparison == "kv_blocks":
        # the utilization the engine runs at: its flag, else its version's default (the
        # recipe's plan setting sizes 00_plan, not an engine it is not passed to)
        cfg.pop("gpu_memory_utilization", None)
        if e.version:
            cfg["vllm_version"] = str(e.version)
        spec = e.speculative
        if spec.on:
            cfg["speculative"] = spec.method
            if spec.draft_model is not None and (spec.draft_model / "config.json").is_file():
                cfg["draft_model"] = spec.draft_model
        if e.parallel is not None:  # the kit passes --tensor-parallel-size from it
            cfg["tp"] = e.parallel.tp
        for key, flags, kind in (
                ("kv_cache_dtype", ("--kv-cache-dtype",), str),
                ("block_size", ("--block-size",), int),
                ("gpu_memory_utilization", ("--gpu-memory-utilization",), float),
                ("tp", ("--tensor-parallel-size", "-tp"), int),
                ("max_num_seqs", ("--max-num-seqs",), int),
                ("max_num_batched_tokens", ("--max-num-batched-tokens",), int)):
            value = _arg(args, *flags)
            if value is not None:
                cfg[key] = kind(value)
        if "--enforce-eager" in args:  # nothing captured: no CUDA-graph estimate
            cfg["cuda_graphs"] = False
        if "block_size" not in cfg and _label_int(cache_config, "block_size"):
            cfg["block_size"] = _label_int(cache_config, "block_size")
            extra["block_size_from"] = "/metrics vllm:cache_config_info{block_size}"
        space = e.env.get("VLLM_CPU_KVCACHE_SPACE")
        if space is not None:
            cfg["kv_budget_gib"] = float(space)
            extra["kv_budget_from"] = "engine.env VLLM_CPU_KVCACHE_SPACE"
    else:  # llamacpp: the KV is -c cells of --cache-type-k/v, not a budget
        cfg.pop("kv_budget_gib", None)
        ctk = _arg(args, "-ctk", "--cache-type-k") or "f16"
        ctv = _arg(args, "-ctv", "--cache-type-v") or "f16"
        extra["cache_type"] = ctk if ctk == ctv else f"{ctk}/{ctv}"
        if ctk == ctv and ctk in _LLAMACPP_KV:
            cfg["kv_cache_dtype"] = _LLAMACPP_KV[ctk]
        slots = _arg(args, "-np", "--parallel")
        extra["slots"] = int(slots) if slots and slots.isdigit() and int(slots) > 0 else 1
    return cfg, extra


def _vllm_rows(p: Plan, facts: Mapping[str, Any], cache_config: Mapping[str, str],
               log_text: str) -> list[PlanFigure]:
    rows = [_figure("weights_gib", p.weights.per_gpu_gib, _number(facts.get(
        "model_loading_gib")), "log: Model loading took X GiB")]
    budget, source = _number(facts.get("kv_cache_gib")), "log: Available KV cache memory"
    if budget is None and _label_int(cache_config, "kv_cache_memory_bytes"):
        budget = (_label_int(cache_config, "kv_cache_memory_bytes") or 0) / _GIB
        source = "/metrics vllm:cache_config_info{kv_cache_memory_bytes}"
    if budget is None and (m := _CPU_KV_SPACE.search(log_text)):
        budget, source = float(m.group(1)), "log: Explicitly set (X/…) GiB for KV cache"
    rows.append(_figure("kv_budget_gib", p.kv_budget_gib, budget, source))
    tokens = _number(facts.get("kv_cache_tokens"))
    rows.append(_figure("kv_cache_tokens", _number(p.kv_cache_tokens), tokens,
                        "log: KV cache size: N tokens"))
    rows.append(_figure("kv_blocks", float(p.capacity.num_blocks) if p.capacity else None,
                        _number(_label_int(cache_config, "num_gpu_blocks")),
                        "/metrics vllm:cache_config_info{num_gpu_blocks}"))
    if p.overhead.runner == "legacy" or p.kv_budget_gib is None:
        return rows
    # vLLM's own breakdown ("Actual usage is …", "Estimated CUDA graph memory"), part by part
    usage = "log: Desired GPU memory utilization … Actual usage is …"
    o, budget = p.overhead, p.kv_budget_gib
    rows += [_figure("gpu_memory_utilization", p.config.utilization,
                     _number(facts.get("gpu_memory_utilization")), usage),
             _figure("activation_peak_gib", o.activation_gib,
                     _number(facts.get("activation_peak_gib")), usage, budget),
             _figure("non_torch_gib", o.non_torch_gib, _number(facts.get("non_torch_gib")),
                     usage, budget),
             _figure("cuda_graph_estimate_gib", o.cuda_graph_gib,
                     _number(facts.get("cuda_graph_estimate_gib")) if o.runner == "v1"
                     or facts.get("cuda_graph_estimate_gib") is not None else 0.0,
                     "log: Estimated CUDA graph memory (V1 model runner; none on V2)", budget)]
    return rows


def _llamacpp_rows(p: Plan, facts: Mapping[str, Any], cfg: Mapping[str, Any],
                   extra: dict[str, Any], draft: Path | None) -> list[PlanFigure]:
    from benchlib.memory import kv_layout, load_gguf

    cells = p.max_model_len * int(extra["slots"])
    extra["kv_cells"] = cells
    rows = [_figure("weights_gib", p.weights.per_gpu_gib,
                    _number(facts.get("model_loading_gib")),
                    "log: load_tensors: … model buffer size = X MiB (summed)")]
    per_token = p.layout.bytes_per_token + p.layout.sliding_bytes_per_token
    sized = "kv_cache_dtype" in cfg
    rows.append(_figure("kv_cache_gib", cells * per_token / _GIB if sized else None,
                        _number(facts.get("kv_cache_gib")),
                        "log: llama_kv_cache: size = X MiB"))
    rows.append(_figure("kv_cache_tokens", float(cells), _number(facts.get("kv_cache_tokens")),
                        "log: llama_kv_cache: (N cells, …, S/S seqs): cells × streams"))
    if draft is not None and draft.suffix == ".gguf" and draft.is_file():
        info = load_gguf(draft)
        rows.append(_figure("draft_weights_gib", info.tensor_bytes / _GIB,
                            _number(facts.get("draft_model_gib")),
                            "log: the draft's model buffer size lines"))
        if sized:  # the draft's own KV: as many cells, its own bytes per token
            layout = kv_layout(info.arch, kv_cache_dtype=str(cfg["kv_cache_dtype"]))
            rows.append(_figure("draft_kv_cache_gib", cells * (
                layout.bytes_per_token + layout.sliding_bytes_per_token) / _GIB,
                _number(facts.get("draft_kv_cache_gib")),
                "log: the draft's llama_kv_cache: size = X MiB"))
    return rows


def compare_engine_to_plan(recipe: Recipe, model_path: Path | None,
                           log_facts: Mapping[str, Any], *, log_text: str = "",
                           cache_config: Mapping[str, str] | None = None) -> EngineVsPlan:
    """The plan for this engine's settings beside what it reported (``log_facts``: the
    parsed ``engine.log``; ``cache_config``: vLLM's ``vllm:cache_config_info`` labels)."""
    from benchlib.memory import PlanConfig, plan

    kind, how = recipe.engine.kind, adapter(recipe.engine.kind).plan_comparison
    if how is None:
        covered = " and ".join(a.label for a in ADAPTERS.values() if a.plan_comparison)
        return EngineVsPlan(skipped=f"engine {kind}: the comparison covers {covered}")
    model = model_path or recipe.model.local_path
    if model is None:
        return EngineVsPlan(skipped="no local model to plan from")
    if model.is_dir() and not (model / "config.json").is_file():
        return EngineVsPlan(skipped=f"no config.json in {model}")
    cache_config = cache_config or {}
    cfg, extra = _settings(recipe, model, cache_config)
    shown = {k: str(v) if isinstance(v, Path) else v for k, v in cfg.items()} | extra
    try:  # a model the plan cannot read is said, never a failed launch
        p = plan(PlanConfig(**cfg))
        if how == "kv_blocks":
            rows = _vllm_rows(p, log_facts, cache_config, log_text)
            shown["block_size"] = p.layout.block_size
        else:
            rows = _llamacpp_rows(p, log_facts, cfg, extra, recipe.engine.speculative.draft_model)
            shown |= extra
    except (BenchlibError, ValueError, OSError) as exc:
        return EngineVsPlan(settings=shown, skipped=f"the plan failed: {exc}")
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
