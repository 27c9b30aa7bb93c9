"""02_launch's results, typed: what the runner's launch did, the fair-A/B probe, the
functional checks and the memory plan set beside what the engine reports."""

from __future__ import annotations

from pydantic import BaseModel, Field, JsonValue

from benchlib.adapters import adapter
from benchlib.checks import CheckResult
from benchlib.recipe import Recipe
from benchlib.runs._models import PlanResult

__all__ = ["FLAG_PCT", "EngineVsPlan", "LaunchResult", "PlanFigure", "Probe"]

#: a difference above this (percent of the plan's figure) is flagged
FLAG_PCT = 2.0


class Probe(BaseModel):
    """One probe request's facts."""

    endpoint: str = Field(description="chat or completions")
    scenario: str = Field(description="whose first prompt and sampling it used")
    prompts_sha256: str | None = Field(description="hash of the prompt the client made")
    prompt_tokens: int | None = Field(description="the server's usage.prompt_tokens")
    output_tokens: int | None = Field(description="tokens produced (null: failed)")
    output_tokens_source: str = Field(description="usage, tokenizer (no usage) or none")
    max_tokens: int = Field(description="asked for")
    ignore_eos: bool = Field(description="whether the body asked to ignore EOS")
    error: str = Field("", description="why the probe failed; '': it did not")


class PlanFigure(BaseModel):
    """One figure the plan predicts, beside what the running engine reports."""

    figure: str = Field(description="weights_gib, kv_budget_gib, kv_cache_gib, "
                                    "kv_cache_tokens, kv_blocks, draft_weights_gib or "
                                    "draft_kv_cache_gib (per GPU)")
    unit: str = Field(description="GiB, tokens or blocks")
    plan: int | float | None = Field(description="what the plan predicts for this engine's "
                                                 "settings")
    engine: int | float | None = Field(description="what the engine reports; None: it did "
                                                   "not say")
    source: str = Field(description="where the engine's figure comes from: its log line or "
                                    "/metrics name")
    diff_pct: float | None = Field(description="(engine − plan) / plan × 100")
    flagged: bool = Field(description=f"|diff_pct| > {FLAG_PCT:g} %")
    advice: str = Field("", description="what differs and what to do, when flagged")


class EngineVsPlan(BaseModel):
    """The plan against the live engine (02_launch)."""

    # open JSON: the plan's own settings, whatever the engine kind names
    settings: dict[str, JsonValue] = Field(
        default_factory=dict, description="what the plan was computed for: the variant's "
        "model file and the engine's own settings (max_model_len, KV dtype, block size, "
        "budget, slots)")
    rows: list[PlanFigure] = Field(default_factory=list, description="one per figure")
    skipped: str | None = Field(None, description="why there is no comparison")

    def row(self, figure: str) -> PlanFigure | None:
        """The row of ``figure``, if compared."""
        return next((r for r in self.rows if r.figure == figure), None)


class LaunchResult(BaseModel):
    """02_launch's results."""

    kind: str = Field("", description="engine kind")
    base_url: str = Field("", description="where it answered")
    command: str = Field("", description="the command line, secrets redacted ('': not "
                                         "started by the runner)")
    startup_s: float | None = Field(None, description="seconds from start to ready")
    engine_log: str = Field("", description="the engine's log in the run folder")
    # open JSON: the log's facts differ by engine kind (benchlib.engines.LogFacts.as_dict)
    log_facts: dict[str, JsonValue] = Field(
        default_factory=dict, description="what the log says (version, KV cache, …)")
    probe: list[Probe] = Field(default_factory=list, description="the fair-A/B probe: how "
                               "the engine counts a prompt, honours max_tokens, streams usage")
    checks: list[CheckResult] = Field(
        default_factory=list, description="functional checks through the openai SDK (the "
        "recipe's checks): chat, thinking off and on, the tool-call round trip")
    plan_vs_engine: EngineVsPlan = Field(
        default_factory=EngineVsPlan, description="the memory plan for this engine's "
        "settings beside what the engine reports (weights, KV budget, KV tokens and blocks: "
        "log lines and /metrics), a difference above 2 % flagged")

    def planned_kv_tokens(self) -> int | None:
        """The plan's KV capacity in tokens for this engine's own settings (speculation's
        share, llama.cpp's ``-c``), as 02_launch compared it; None where it did not."""
        row = self.plan_vs_engine.row("kv_cache_tokens")
        return int(row.plan) if row is not None and row.plan is not None else None


def planned_capacity(plan: PlanResult | None, launch: LaunchResult | None,
                     variant: Recipe) -> tuple[int | None, float | None]:
    """The KV capacity (tokens) and the concurrency the plan gives a variant's engine with
    its own settings, to set beside what it measured.

    02_launch's plan where it compared the engine (concurrency: llama.cpp's slots, else the
    tokens over ``max_model_len``, as vLLM counts it); else 00_plan's, but only for a
    ``variant`` without speculation of an engine 00_plan sizes (vLLM's split, or an engine
    whose ``plan_settings`` make 00_plan say what it reports); else None. 00_plan's
    figure is vLLM's split without the engine's flags: beside a llama.cpp, open-jet or
    speculative variant it would be another engine's number."""
    kv = launch.planned_kv_tokens() if launch is not None else None
    if launch is not None and kv is not None:
        settings = launch.plan_vs_engine.settings
        slots, context = settings.get("slots"), settings.get("max_model_len")
        concurrency = (float(slots) if isinstance(slots, int) else
                       kv / context if isinstance(context, int) and context > 0 else None)
        return kv, concurrency
    numbers = plan.plan if plan is not None else None
    engine = adapter(variant.engine.kind)
    # 00_plan sizes vLLM's split (compared by KV blocks) or what plan_settings make it say
    sized = engine.plan_comparison == "kv_blocks" or bool(engine.plan_settings)
    if sized and variant.engine.speculative.method == "off" and numbers is not None:
        return numbers.kv_cache_tokens, numbers.max_concurrency
    return None, None
