"""00_plan's, 01_download's and 04_compare's results, typed (02_launch's: :mod:`._launch`;
03_measure's: :mod:`._measure`). Fields a reader uses are declared; where a record is a
table row whose columns another module owns, or a number set ``benchlib plan --json``
prints, the rest rides along as JSON (``extra="allow"``), as it was written."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from benchlib.measure import SpecCost
from benchlib.provenance import FilesHash, ModelOrigin

__all__ = ["CompareResult", "DownloadResult", "PlanNumbers", "PlanResult", "PlanRow",
           "ReferenceRow", "SignificanceRow", "SweepRow",
           "VariantRow"]


class PlanRow(BaseModel):
    """One scenario × concurrency the recipe will run."""

    scenario: str = Field(description="the recipe's scenario")
    endpoint: str = Field(description="chat or completions")
    input_len: int = Field(description="input tokens")
    output_len: int = Field(description="output tokens")
    concurrency: int = Field(description="requests in flight at once")
    num_prompts: int = Field(description="requests sent")
    tokens_needed: int = Field(description="input + output tokens of one request")


class PlanNumbers(BaseModel):
    """``benchlib plan --json``'s numbers (:meth:`benchlib.memory.Plan.summary`): the ones
    readers use are fields, the rest JSON."""

    # open JSON: the plan's summary has some forty numbers; readers name the few below
    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    weights_gib_per_gpu: float | None = Field(None, description="weights per GPU, GiB")
    kv_cache_tokens: int | None = Field(None, description="the KV cache's capacity, tokens")
    max_concurrency: float | None = Field(None, description="requests of max_model_len that fit")
    decode_floor_ms: float | None = Field(None, description="the bandwidth's floor on TPOT")


class PlanResult(BaseModel):
    """00_plan's results."""

    scenarios: list[PlanRow] = Field(default_factory=list,
                                     description="one row per scenario × concurrency")
    warnings: list[str] = Field(default_factory=list, exclude_if=lambda v: not v,
                                description="scenarios the engine will refuse (too long)")
    plan: PlanNumbers | None = Field(None, description="`benchlib plan --json`'s numbers; "
                                                       "None: no config.json to plan from")
    plan_skipped: str | None = Field(None, exclude_if=lambda v: v is None,
                                     description="why there is no plan")

class DownloadResult(BaseModel):
    """01_download's results."""

    source: Literal["local", "hub"] = Field(description="a local folder, or the hub")
    model_path: str = Field(description="the model folder (GGUF: the file) launch and "
                                        "measure use")
    revision: str | None = Field(description="the recipe's pin")
    resolved_revision: str | None = Field(description="the commit the hub resolved it to")
    files_hash: FilesHash = Field(description="content hash of the folder (GGUF: the file "
                                              "and its shards)")
    draft_model: str | None = Field(None, description="the speculative draft model, if any")
    draft_files_hash: FilesHash | None = Field(None, description="its content hash")
    origin: ModelOrigin | None = Field(
        None, description="a local model prepared by benchlib real-model: the PyPI package, "
                          "version and wheel sha256 it came from (its PROVENANCE.json)")




class VariantRow(BaseModel):
    """One variant × scenario × concurrency of a comparison run
    (``pipeline.steps._variants.VARIANT_COLUMNS``; the speedup's interval columns too)."""

    # open JSON: the table's other columns, as the comparison wrote them
    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    variant: str = Field(description="the variant")
    scenario: str | None = Field(None, description="the scenario")
    concurrency: int | None = Field(None, description="requests in flight at once")
    speculative: str | None = Field(None, description="its speculation, or off")
    speedup: int | float | None = Field(None, description="per-user tok/s over the "
                                                            "baseline's")
    speedup_over: str | None = Field(None, description="the baseline variant")
    caveats: str | None = Field(None, description="every caveat, '; '-joined")


class ReferenceRow(BaseModel):
    """One published figure beside the run's (``benchlib.references.REFERENCE_COLUMNS``)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    reference: str = Field(description="the reference's name")
    variant: str | None = Field(None, description="the variant it is set beside")
    scenario: str | None = Field(None, description="the scenario")
    concurrency: int | None = Field(None, description="the concurrency")
    metric: str = Field(description="the figure's result key")
    unit: str | None = Field(None, description="its unit")
    published: int | float | None = Field(None, description="the published value")
    measured: int | float | None = Field(None, description="the run's value")
    measured_over_published: int | float | None = Field(None, description="their ratio")
    engine: str | None = Field(None, description="the reference's engine")
    checkpoint: str | None = Field(None, description="its checkpoint")
    hardware: str | None = Field(None, description="its hardware")
    source: str | None = Field(None, description="where it was published")
    published_on: str | None = Field(None, description="when")
    measured_as: str | None = Field(None, description="how it was measured")
    caveats: str | None = Field(None, description="why it may not compare")

    #: the reference's facts a write-up cites beside its figures
    FACTS: ClassVar[tuple[str, ...]] = (
        "variant", "scenario", "concurrency", "engine", "checkpoint", "hardware", "source",
        "published_on", "measured_as", "caveats")


class SignificanceRow(BaseModel):
    """A variant's headline figure over the baseline's, with its interval
    (``pipeline.steps._significance.SIGNIFICANCE_COLUMNS``)."""

    variant: str = Field(description="the variant")
    baseline: str = Field(description="the baseline variant (the recipe's first)")
    scenario: str = Field(description="the scenario")
    concurrency: int = Field(description="the concurrency")
    figure: str = Field(description="the headline figure")
    ratio: int | float | None = Field(None, description="variant / baseline")
    low: int | float | None = Field(None, description="the 95 % interval's lower end")
    high: int | float | None = Field(None, description="its upper end")
    verdict: str = Field("", description="significant, not significant or no interval")
    interval_from: str = Field("", description="repeats, or one run's requests")
    note: str | None = Field(None, description="why there is no ratio or interval")


class SweepRow(BaseModel):
    """An SLO search kept in the run folder, in a line (``benchlib.sweep.sweep_row``)."""

    # open JSON: the row's other columns, as sweep_row wrote them
    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    sweep: str = Field(description="the search's folder under RUN/sweep/ ('.': the run's)")
    mode: str | None = Field(None, description="concurrency or rate")
    knee: int | float | None = Field(None, description="the highest load that met every SLO")
    first_fail: int | float | None = Field(None, description="the lowest that failed")
    failed_by: str | None = Field(None, description="what failed there")


class CompareResult(BaseModel):
    """04_compare's results."""

    runs: list[str] = Field(default_factory=list,
                            description="the run folders compared, this run first")
    provenance_differences: list[str] = Field(default_factory=list,
                                              description="the provenance facts that differ")
    variants: list[VariantRow] = Field(
        default_factory=list, description="a comparison run's variants side by side: one "
        "row per variant × scenario × concurrency (steps._variants.VARIANT_COLUMNS)")
    references: list[ReferenceRow] = Field(
        default_factory=list, description="published figures beside the run's: one row per "
        "figure (benchlib.references.REFERENCE_COLUMNS)")
    significance: list[SignificanceRow] = Field(
        default_factory=list, description="each variant's headline figures over the first "
        "variant's, with bootstrap 95 % intervals and a verdict (significant only when the "
        "interval excludes 1): one row per variant × scenario × concurrency × figure "
        "(steps._significance.SIGNIFICANCE_COLUMNS)")
    sweeps: list[SweepRow] = Field(
        default_factory=list, description="the run folder's SLO searches (RUN/sweep/…): one "
        "row per search, its knee and what failed one step past it (benchlib.sweep.sweep_row)")
    spec_cost: list[SpecCost] = Field(
        default_factory=list, description="what speculation costs: each speculating variant's "
        "verify step against its own engine's plain step at concurrency 1, the break-even "
        "tokens per step and the projections (benchlib.measure.spec_cost)")
    synthetic_runs: list[str] = Field(
        default_factory=list, description="the compared runs measured on benchlib's scripted "
        "server (canned timings, no engine): shown apart, labelled '(synthetic)'")
