"""Validation cases for SGLang: a real ``config.json``, the SGLang startup lines it produced,
and the settings; predicted with the plan (:mod:`benchlib.memory._sglang` for the pool) and
compared with the quoted lines, parsed, never typed twice. Kept apart from the predictor so
that the plan can use the predictor without importing its own validation."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from benchlib.memory._cases import pct_error
from benchlib.memory._load import load_model_config
from benchlib.memory._plan import PlanConfig, plan
from benchlib.memory._sglang import GIB, parse_sglang_log, sglang_cell_bytes, sglang_pool

__all__ = ["SGLangCaseResult", "check_sglang_case"]


class SGLangCaseResult(BaseModel):
    """One published SGLang startup next to the prediction, with signed percentage errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="the case folder")
    covers: list[str] = Field(description="what the case exercises")
    free_source: str = Field(description="'log' when the log gave the memory the pool was "
                             "sized from, 'estimated' from the GPU's memory, else 'unknown'")
    weights_gib: float = Field(description="predicted weights per GPU")
    weights_reported: float | None = Field(description="'mem usage' of 'Load weight end'")
    weights_err_pct: float | None = Field(description="signed error, %")
    tokens: int | None = Field(description="predicted max_total_num_tokens (None without "
                               "--mem-fraction-static or a GPU)")
    tokens_reported: int | None = Field(description="max_total_num_tokens (else #tokens)")
    tokens_err_pct: float | None = Field(description="signed error, %")
    kv_gib: float | None = Field(description="K+V (MLA: KV) GiB for the reported #tokens")
    kv_gib_reported: float | None = Field(description="'K size' + 'V size' (or 'KV size')")
    kv_err_pct: float | None = Field(description="signed error, %")


def _pct(pred: float, ref: float | None) -> float | None:
    return None if ref is None or ref == 0 else pct_error(pred, ref)


def check_sglang_case(case_dir: Path) -> SGLangCaseResult:
    """Predict a case's pool from its config, settings and (where quoted) measured free memory,
    and compare with the log's numbers (parsed from the quoted lines, never typed twice)."""



    raw = yaml.safe_load((case_dir / "case.yaml").read_text())
    rep = parse_sglang_log(str(x) for x in raw.get("log", []))
    arch = load_model_config(case_dir / "config.json")
    cfg = PlanConfig(model=case_dir / "config.json", **raw["settings"])
    p = plan(cfg, arch)
    page = int(raw.get("page_size", 1))
    mfs = cfg.mem_fraction_static or rep.get("mem_fraction_static")
    pool = None
    if mfs or p.memory_gib:
        pool = sglang_pool(arch, weights_gib=p.weights.per_gpu_gib, tp=p.tp,
                           kv_cache_dtype=cfg.kv_cache_dtype,
                           mem_fraction_static=float(mfs) if mfs else None,
                           gpu_memory_gib=p.memory_gib,
                           free_before_weights_gib=_opt(rep.get("free_before_weights_gib")),
                           free_after_weights_gib=_opt(rep.get("free_after_weights_gib")),
                           page_size=page)
    cell, _ = sglang_cell_bytes(arch, tp=p.tp, kv_cache_dtype=cfg.kv_cache_dtype)
    t_rep = rep.get("max_total_num_tokens", rep.get("kv_pool_tokens"))
    n_rep = rep.get("kv_pool_tokens", t_rep)
    kv_rep = (float(rep["k_size_gib"]) + float(rep["v_size_gib"]) if "k_size_gib" in rep
              else _opt(rep.get("kv_size_gib")))
    kv = (int(n_rep) + page) * cell / GIB if n_rep is not None else None
    w_rep = _opt(rep.get("weights_gib"))
    return SGLangCaseResult(
        name=str(raw.get("name", case_dir.name)), covers=[str(c) for c in raw.get("covers", [])],
        free_source=pool.free_source if pool else "unknown", weights_gib=p.weights.per_gpu_gib,
        weights_reported=w_rep,
        weights_err_pct=_pct(p.weights.per_gpu_gib, w_rep),
        tokens=pool.max_total_num_tokens if pool else None,
        tokens_reported=int(t_rep) if t_rep is not None else None,
        tokens_err_pct=_pct(pool.max_total_num_tokens, _opt(t_rep)) if pool else None, kv_gib=kv,
        kv_gib_reported=kv_rep, kv_err_pct=_pct(kv, kv_rep) if kv is not None else None)


def _opt(value: float | int | None) -> float | None:
    return None if value is None else float(value)
