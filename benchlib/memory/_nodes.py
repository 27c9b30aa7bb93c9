"""How many nodes of which GPU a model needs: the smallest node count (and its tensor ×
pipeline parallel layout) whose weights and KV cache for ``concurrency`` requests of
``context`` tokens fit every GPU.

Each node count ``n`` is tried with ``tp`` = GPUs per node (the largest divisor of it the
model's heads allow, or ``--tp``) and ``pp = n × GPUs per node / tp`` — vLLM's advice for
several nodes: tensor parallel inside a node (NVLink), pipeline stages across nodes.
Pipeline parallelism splits the layers, as vLLM does (``get_pp_indices``: equal shares, a
remainder to the stages before the last); each GPU of a stage holds

* its share of the layers' weights at ``tp`` (attention and norms spread over every layer,
  routed and shared experts and routers over the MoE layers, dense MLPs over the dense ones),
  plus the embedding (and towers) on the first stage and the LM head on the last (a tied
  head is a second copy there);
* its layers' KV cache only, so KV bytes per token per GPU fall by about ``pp`` — unlike
  tensor parallelism, which leaves MLA's latent cache whole on every rank.

A stage's KV budget is vLLM's (``usable − weights − overhead``, :func:`~._plan.plan`); the
engine takes the smallest number of blocks any stage holds, so the stage that runs out first
sets the capacity. The overhead model is vLLM's at ``tp``; SGLang's ``mem_fraction_static``
leaves a similar share. ``benchlib plan --gpus-per-node G --concurrency C`` prints the answer
("needs 2 nodes of 8 × B200 (tp 8 × pp 2)") and the node counts it tried.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from benchlib._exceptions import UsageError
from benchlib.memory._arch import ModelArch
from benchlib.memory._kv import KVLayout, kv_capacity
from benchlib.memory._load import load_model_config
from benchlib.memory._plan import Plan, PlanConfig, plan

__all__ = ["NodeFit", "NodePlan", "pipeline_fit", "plan_nodes", "pp_partition"]

GIB = 1024**3


def pp_partition(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (``get_pp_indices``): equal shares, the
    remainder one each to the stages before the last (which holds the LM head)."""
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    return parts


class NodeFit(BaseModel):
    """One layout tried: per-GPU figures of its heaviest stage and of the stage whose KV
    cache runs out first."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: int
    tp: int
    pp: int
    stage_layers: list[int]
    weights_gib_per_gpu: float
    overhead_gib_per_gpu: float
    kv_budget_gib_per_gpu: float
    kv_cache_tokens: int
    max_concurrency: float
    fits: bool
    why: str


class NodePlan(BaseModel):
    """Every node count tried, in order, up to the first that fits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    gpu: str
    gpu_memory_gib: float
    gpus_per_node: int
    context: int
    concurrency: int
    max_nodes: int
    tried: list[NodeFit]

    @property
    def answer(self) -> NodeFit | None:
        """The smallest node count that fits, or None within ``max_nodes``."""
        return next((f for f in self.tried if f.fits), None)

    @property
    def line(self) -> str:
        """The answer in one sentence: ``needs 2 nodes of 8 × B200 (tp 8 × pp 2): …``."""
        kind = f"{self.gpus_per_node} × {self.gpu}"
        ask = f"{self.concurrency} request{'s' if self.concurrency > 1 else ''} of " \
              f"{self.context:,} tokens"
        a = self.answer
        if a is None:
            return f"does not fit {self.max_nodes} nodes of {kind} with {ask}"
        return (f"needs {a.nodes} node{'s' if a.nodes > 1 else ''} of {kind} (tp {a.tp} × "
                f"pp {a.pp}) for {ask}: {a.weights_gib_per_gpu:.1f} GiB of weights per GPU, "
                f"KV for {a.max_concurrency:.1f} requests ({a.kv_cache_tokens:,} tokens)")

    def summary(self) -> dict[str, Any]:
        """What ``benchlib plan --gpus-per-node … --json`` prints."""
        a = self.answer
        return {"model": self.model, "gpu": self.gpu, "gpu_memory_gib": self.gpu_memory_gib,
                "gpus_per_node": self.gpus_per_node, "context": self.context,
                "concurrency": self.concurrency, "nodes": a.nodes if a else None,
                "tp": a.tp if a else None, "pp": a.pp if a else None, "answer": self.line,
                "tried": [f.model_dump() for f in self.tried]}


def _layer_entries(a: ModelArch, layout: KVLayout) -> list[int]:
    """The model layer each of ``layout.layers`` belongs to (``kv_layout`` skips layers
    with no mixer and adds a Mamba cache beside a parallel hybrid's attention)."""
    out: list[int] = []
    for i, kind in enumerate(a.layer_kinds):
        if kind == "none":
            continue
        if a.parallel_mamba and kind != "mamba":
            out.append(i)
        out.append(i)
    if len(out) != len(layout.layers):  # spread evenly: a layout this module does not know
        n = len(layout.layers)
        out = [min(a.num_layers - 1, j * a.num_layers // max(1, n)) for j in range(n)]
    return out


def _stage_weights(p: Plan, stages: list[range]) -> list[float]:
    """Bytes on one GPU of each stage: the layers' share of the weights at ``tp`` (per kind
    of feed-forward), the embedding and towers on the first, the LM head on the last."""
    a, w, tp = p.arch, p.weights, p.tp
    by = w.bytes_by_role
    embed, towers = by.get("embed", 0) / tp, by.get("towers", 0) / tp
    head = by.get("lm_head", 0) / tp
    moe = w.experts_per_gpu_bytes + by.get("shared_experts", 0) / tp + by.get("router", 0)
    dense = by.get("mlp", 0) / tp
    moe_layers = [i for i in range(a.num_layers) if a.is_moe_layer(i)]
    dense_layers = [i for i in range(a.num_layers) if i not in set(moe_layers)]
    common = w.per_gpu_bytes - embed - towers - head - moe - dense
    if not moe_layers:
        common, moe = common + moe, 0.0
    if not dense_layers:
        common, dense = common + dense, 0.0
    out = []
    for s, layers in enumerate(stages):
        n_moe = sum(1 for i in layers if a.is_moe_layer(i))
        b = common * len(layers) / a.num_layers
        b += moe * n_moe / max(1, len(moe_layers))
        b += dense * (len(layers) - n_moe) / max(1, len(dense_layers))
        if s == 0:
            b += embed + towers
        if s == len(stages) - 1:
            b += head if head or len(stages) == 1 else embed  # a tied head: its own copy
        out.append(b)
    return out


def pipeline_fit(p: Plan, pp: int, *, concurrency: int, nodes: int = 1) -> NodeFit:
    """``p`` (a plan at its ``tp``, one stage) split into ``pp`` pipeline stages: the
    heaviest stage's weights, the scarcest stage's KV, and whether ``concurrency`` requests
    of ``p.max_model_len`` tokens fit."""
    a = p.arch
    if p.usable_gib is None:
        raise UsageError("--gpu", "the node count needs the GPU's memory: give --gpu or "
                         "--gpu-memory-gib")
    parts = pp_partition(a.num_layers, pp)
    bounds = [sum(parts[:s]) for s in range(pp + 1)]
    stages = [range(bounds[s], bounds[s + 1]) for s in range(pp)]
    weights = _stage_weights(p, stages)
    owner = _layer_entries(a, p.layout)
    over = p.overhead.total_gib
    scarcest: tuple[float, float, int] | None = None  # (concurrency, budget, tokens)
    for layers, wb in zip(stages, weights, strict=True):
        budget = p.usable_gib - wb / GIB - over
        cache = [c for c, i in zip(p.layout.layers, owner, strict=True) if i in layers]
        if not cache:
            continue
        stage = p.layout.model_copy(update={"layers": cache})
        cap = kv_capacity(stage, max(0.0, budget) * GIB, max_model_len=p.max_model_len,
                          max_num_batched_tokens=p.overhead.max_num_batched_tokens)
        conc = cap.max_concurrency if budget > 0 else 0.0
        if scarcest is None or conc < scarcest[0]:
            scarcest = (conc, budget, cap.kv_cache_tokens if budget > 0 else 0)
    conc, budget, tokens = scarcest or (math.inf, p.usable_gib - max(weights) / GIB - over, 0)
    heaviest = max(weights) / GIB
    if heaviest > p.usable_gib:
        why = (f"weights {heaviest:.1f} GiB per GPU, more than the {p.usable_gib:.1f} GiB "
               "the engine may use")
    elif budget <= 0:
        why = f"no memory left for the KV cache ({budget:.1f} GiB after weights and overhead)"
    elif conc < concurrency:
        why = f"KV for {conc:.2f} of {concurrency} requests of {p.max_model_len:,} tokens"
    else:
        why = f"fits: KV for {conc:.1f} requests of {p.max_model_len:,} tokens"
    return NodeFit(nodes=nodes, tp=p.tp, pp=pp, stage_layers=parts,
                   weights_gib_per_gpu=round(heaviest, 3), overhead_gib_per_gpu=round(over, 3),
                   kv_budget_gib_per_gpu=round(budget, 3), kv_cache_tokens=int(tokens),
                   max_concurrency=round(conc, 3), fits=why.startswith("fits"), why=why)


def _node_tp(a: ModelArch, gpus_per_node: int) -> int:
    """The largest divisor of ``gpus_per_node`` the model's heads allow as a TP size."""
    for t in range(gpus_per_node, 0, -1):
        kv_ok = a.mla is not None or a.num_kv_heads % t == 0 or t % a.num_kv_heads == 0
        if gpus_per_node % t == 0 and a.num_heads % t == 0 and kv_ok:
            return t
    return 1


def plan_nodes(cfg: PlanConfig, *, gpus_per_node: int, concurrency: int = 1,
               max_nodes: int = 8, arch: ModelArch | None = None) -> NodePlan:
    """Try 1, 2, … ``max_nodes`` nodes of ``gpus_per_node`` × ``cfg.gpu`` until ``concurrency``
    requests of ``cfg.max_model_len`` tokens fit (``cfg.tp``: the TP size to keep; else the
    node's own). ``cfg.num_gpus`` and ``cfg.kv_budget_gib`` are the search's to set."""
    if gpus_per_node < 1 or concurrency < 1 or max_nodes < 1:
        raise UsageError("--gpus-per-node", "GPUs per node, concurrency and max nodes must "
                         "be ≥ 1")
    if cfg.num_gpus is not None or cfg.kv_budget_gib is not None:
        raise UsageError("--num-gpus", "the node search sets the GPU count and predicts each "
                         "stage's KV budget: leave out --num-gpus and --kv-budget-gib")
    a = arch or load_model_config(cfg.model)
    tp = cfg.tp or _node_tp(a, gpus_per_node)
    one = plan(cfg.model_copy(update={"tp": tp, "num_gpus": tp}), arch=a)
    tried: list[NodeFit] = []
    for n in range(1, max_nodes + 1):
        world = n * gpus_per_node
        if world % tp or world // tp > a.num_layers:
            continue
        fit = pipeline_fit(one, world // tp, concurrency=concurrency, nodes=n)
        tried.append(fit)
        if fit.fits:
            break
    gpu = one.gpu.name if one.gpu else f"{one.memory_gib:g} GiB GPU"
    return NodePlan(model=a.name, gpu=gpu, gpu_memory_gib=one.memory_gib or 0.0,
                    gpus_per_node=gpus_per_node, context=one.max_model_len,
                    concurrency=concurrency, max_nodes=max_nodes, tried=tried)
