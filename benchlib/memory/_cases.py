"""Validation cases: a real ``config.json``, the vLLM log lines it produced, and the settings.

Each case folder holds ``config.json`` and ``case.yaml`` (source URL, quoted log lines, the
launch settings under the plan's field names). The reported numbers are parsed from the quoted
lines, never typed twice, so a case cannot drift from its source. The tests assert the
tolerances; ``benchmarks/memory_vs_vllm_logs.py`` prints the same comparison as a table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from benchlib.memory._load import load_model_config
from benchlib.memory._plan import PlanConfig, plan
from benchlib.memory._vllm_log import parse_vllm_log

__all__ = ["CaseResult", "ValidationCase", "check_case", "load_cases"]


class ValidationCase(BaseModel):
    """One published vLLM startup and what it was launched with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    folder: Path
    source: str
    config_source: str
    covers: list[str]
    settings: dict[str, Any]
    log: list[str]
    reported: dict[str, float | int | str]
    note: str = ""


class CaseResult(BaseModel):
    """Predictions next to the log's numbers, with signed percentage errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    covers: list[str]
    vllm_version: str
    weights_gib: float
    weights_reported: float | None
    weights_err_pct: float | None
    kv_tokens: int | None
    kv_tokens_reported: int | None
    kv_tokens_err_pct: float | None
    concurrency: float | None
    concurrency_reported: float | None
    budget_predicted_gib: float | None
    budget_reported: float | None
    budget_err_gib: float | None
    budget_err_pct: float | None


def load_cases(folder: Path) -> list[ValidationCase]:
    """Every ``*/case.yaml`` under ``folder``, sorted by name."""
    cases = []
    for path in sorted(folder.glob("*/case.yaml")):
        raw = yaml.safe_load(path.read_text())
        log = [str(x) for x in raw.get("log", [])]
        cases.append(ValidationCase(
            name=str(raw.get("name", path.parent.name)), folder=path.parent,
            source=str(raw["source"]), config_source=str(raw["config_source"]),
            covers=[str(c) for c in raw.get("covers", [])], settings=dict(raw["settings"]),
            log=log, reported=parse_vllm_log(log), note=str(raw.get("note", ""))))
    return cases


def pct_error(pred: float, ref: float) -> float:
    """Signed error of a prediction against a reference, in percent of the reference."""
    return 100.0 * (pred - ref) / ref


def check_case(case: ValidationCase) -> CaseResult:
    """Weights vs "Model loading took", KV tokens from the reported budget vs "KV cache size",
    and the budget predicted from total memory vs "Available KV cache memory"."""
    arch = load_model_config(case.folder / "config.json")
    rep = case.reported
    settings = dict(case.settings)
    version = str(settings.get("vllm_version", rep.get("vllm_version", "0.32")))
    settings["vllm_version"] = version
    base = PlanConfig(model=case.folder / "config.json", **settings)
    predicted = plan(base, arch)
    w_rep = rep.get("weights_gib")
    b_rep = rep.get("kv_budget_gib")
    tokens = conc = None
    if b_rep is not None and float(b_rep) > 0:
        given = plan(base.model_copy(update={"kv_budget_gib": float(b_rep)}), arch)
        tokens = given.kv_cache_tokens
        conc = given.capacity.max_concurrency if given.capacity else None
    t_rep = rep.get("kv_cache_tokens")
    c_rep = rep.get("max_concurrency")
    b_pred = predicted.kv_budget_gib if predicted.kv_budget_source == "predicted" else None
    return CaseResult(
        name=case.name, covers=case.covers, vllm_version=version,
        weights_gib=predicted.weights.per_gpu_gib,
        weights_reported=float(w_rep) if w_rep is not None else None,
        weights_err_pct=pct_error(predicted.weights.per_gpu_gib, float(w_rep))
        if w_rep is not None else None,
        kv_tokens=tokens, kv_tokens_reported=int(t_rep) if t_rep is not None else None,
        kv_tokens_err_pct=pct_error(tokens, int(t_rep)) if tokens and t_rep else None,
        concurrency=conc, concurrency_reported=float(c_rep) if c_rep is not None else None,
        budget_predicted_gib=b_pred,
        budget_reported=float(b_rep) if b_rep is not None else None,
        budget_err_gib=b_pred - float(b_rep) if b_pred is not None and b_rep is not None
        else None,
        budget_err_pct=pct_error(b_pred, float(b_rep))
        if b_pred is not None and b_rep is not None and float(b_rep) > 0 else None)
