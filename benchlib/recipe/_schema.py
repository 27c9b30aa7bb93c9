"""The recipe schema: what ``params/*.yaml`` may say, checked strictly.

Every model forbids unknown keys (a misspelt key is an error, not a silent default). Revisions,
commits and versions must be strings: YAML reads ``0123456`` as the number 42798 and ``1.10``
as 1.1, so a number there is refused with a hint to quote it. Secrets are never values: a
recipe names the environment variable that holds them (``api_key_env``, ``hf_token_env``).
The rules that span several fields are plain functions in :mod:`benchlib.recipe._rules`, each
validator here one call to its rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from benchlib.adapters import ADAPTERS, EngineKind, Speculative
from benchlib.recipe._accuracy import AccuracySpec
from benchlib.recipe._assumptions import Assumption
from benchlib.recipe._parallel import Parallel
from benchlib.recipe._parts import (
    CompareSpec,
    EnvName,
    FunctionalChecks,
    HardwareSpec,
    Pin,
    _Strict,
)
from benchlib.recipe._rules import (
    check_assumed,
    check_comparable_variants,
    check_dummy_weights,
    check_engine,
    check_machine_layout,
    check_plan_keys,
    check_steps,
    check_unique_names,
    plan_engine_settings,
)
from benchlib.recipe._scenario import Scenario

__all__ = [
    "AccuracySpec",
    "CompareSpec",
    "EngineSpec",
    "FunctionalChecks",
    "HardwareSpec",
    "ModelSpec",
    "Recipe",
    "Scenario",
    "Variant",
]


StepName = Literal["00_plan", "01_download", "02_launch", "03_measure", "04_compare"]
ALL_STEPS: tuple[StepName, ...] = ("00_plan", "01_download", "02_launch", "03_measure",
                                   "04_compare")


class ModelSpec(_Strict):
    """Which weights: a hub id with a revision pin, or a local folder."""

    id: str = Field(description="hub id (org/name) or a name for a local model")
    revision: Pin | None = Field(None, description="branch, tag or commit to pin")
    local_path: Path | None = Field(None, description="use this folder instead of the hub")
    include: list[str] = Field(default_factory=list, description="hub file patterns to fetch")
    exclude: list[str] = Field(default_factory=list, description="hub file patterns to skip")
    format: Literal["safetensors", "gguf", "other"] = "safetensors"
    hf_token_env: EnvName | None = Field(None, description="env var holding a hub token")
    served_name: str | None = Field(None, description="name the engine serves it under")
    tokenizer: Path | None = Field(None, description="local tokenizer folder, when the "
                                   "model's own files have none (GGUF, a config-only folder); "
                                   "vLLM and SGLang are given it too")
    weights: Literal["real", "dummy", "random"] = Field(
        "real", description="dummy: the engine makes random weights from config.json alone "
        "(vLLM's and SGLang's --load-format dummy), so a plan can be checked against the live "
        "engine before hundreds of GiB are downloaded; random: the files hold random values "
        "(a model made offline); either way memory and timings are real, text, speculative "
        "acceptance and accuracy are not, and every row says so")

    @property
    def served_model_name(self) -> str:
        return self.served_name or self.id


class EngineSpec(_Strict):
    """How to start the engine, or where an already running one listens (``endpoint``)."""

    kind: EngineKind = Field(description="the engine: " + ", ".join(ADAPTERS))
    version: Pin | None = Field(None, description="expected engine version")
    commit: Pin | None = Field(None, description="engine source commit, if built from source")
    python: Path | None = Field(None, description="interpreter of the engine's environment")
    executable: Path | None = Field(None, description="server binary (llama.cpp, open-jet)")
    lock: Path | None = Field(None, description="the lock file the engine's Python environment "
                              "was installed from (name==version lines: pip-compile, rye, "
                              "pip freeze): held to it at the run's start, every difference "
                              "recorded beside the machine's (benchlib/provenance/_lock.py)")
    args: list[Pin] = Field(default_factory=list, description="extra command-line arguments")
    env: dict[str, Pin] = Field(default_factory=dict, description="extra environment")
    host: str = "127.0.0.1"
    port: int | None = Field(None, ge=1, le=65535, description="default: a free port")
    base_url: str | None = Field(None, description="endpoint kind: the server's http:// or "
                                 "https:// URL, without /v1 (a hosted API, a TLS proxy)")
    ca_bundle: Path | None = Field(None, description="https: trust the CA certificates in "
                                   "this PEM file instead of the system's")
    insecure: bool = Field(False, description="https: check no certificate (still encrypted)")
    api_key_env: EnvName | None = Field(None, description="env var holding the API key")
    ready_path: str = Field("/v1/models", description="GET this until it answers 200")
    ready_timeout_s: float = Field(900.0, gt=0)
    max_model_len: int | None = Field(None, ge=1)
    speculative: Speculative = Field(default_factory=Speculative,
                                     description="speculative decoding; off by default")
    parallel: Parallel | None = Field(None, description="tp × pp and how nodes join "
                                      "(vLLM, SGLang); None: the engine's default, or args")
    nice: dict[Annotated[str, Field(min_length=1)], Annotated[int, Field(ge=1, le=19)]] = Field(
        default_factory=dict, description="engine processes by name (e.g. vLLM's "
        "VLLM::EngineCore) whose every thread the kit lowers to this nice value once the "
        "engine is ready: a busy-polling process then stops delaying the one that streams on "
        "a machine with few cores (see benchlib/engines/_priority.py)")

    @model_validator(mode="after")
    def _endpoint_needs_url(self) -> EngineSpec:
        check_engine(self)
        return self


class Variant(_Strict):
    """One side of a comparison: the recipe's engine and model, or its own, with its own
    speculative setting and extra flags; every variant runs the recipe's scenarios."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="unique: names the "
                      "variant's folder in the run and its rows in 04_compare")
    engine: EngineSpec | None = Field(None, description="the engine; default: the recipe's")
    model: ModelSpec | None = Field(None, description="the model; default: the recipe's")
    speculative: Speculative | None = Field(None, description="default: the engine's")
    args: list[Pin] = Field(default_factory=list,
                            description="flags added after the engine's own args")
    thinking: bool | None = Field(None, description="whether the engine is set up to think "
                                  "(reasoning on); None: the model's default")


class Recipe(_Strict):
    """A whole benchmark: model, engine, expected hardware, scenarios, comparisons.

    With ``variants``, each variant runs every scenario in turn (one engine alive at a time)
    and ``04_compare`` sets them side by side; :meth:`variant_recipes` gives each variant's
    own one-engine recipe. Without, the recipe is its own single variant.
    """

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    model: ModelSpec
    engine: EngineSpec
    hardware: HardwareSpec = Field(default_factory=HardwareSpec)
    scenarios: list[Scenario] = Field(
        default_factory=list, description="what 03_measure measures; none for a start-only "
        "run (steps without 03_measure)")
    variants: list[Variant] = Field(default_factory=list, description="engines compared")
    thinking: bool | None = Field(None, description="whether the engine is set up to think; "
                                  "None: the model's default (a variant may say otherwise)")
    compare: CompareSpec = Field(default_factory=CompareSpec)
    accuracy: AccuracySpec | None = Field(None, description="GSM8K after the scenarios "
                                          "(03_measure): lm-eval's task or SGLang's "
                                          "few_shot_gsm8k; None: not scored")
    checks: FunctionalChecks = Field(default_factory=FunctionalChecks,
                                     description="functional checks through the openai SDK "
                                     "in 02_launch (chat endpoints only)")
    plan: dict[str, Any] = Field(
        default_factory=dict,
        description="`benchlib plan` settings for 00_plan (gpu, num_gpus, tp, "
                    "gpu_memory_utilization, kv_cache_dtype, kv_budget_gib, …)")
    steps: list[StepName] = Field(default_factory=lambda: list(ALL_STEPS))
    writeup: Path | None = Field(
        None, description="the write-up skeleton: Markdown, one cell per '## ' section, "
        "numbers cited as {{ variants.NAME.SCENARIO.c1.tok_s }}; default: the kit's own")
    cell_timeout_s: float = Field(3600.0, gt=0, description="per notebook cell")
    assumptions: list[Assumption] = Field(
        default_factory=list, description="settings the source does not give, each with "
        "the value taken and why: printed as caveats by --check, 04_compare and the report")

    @field_validator("plan")
    @classmethod
    def _plan_engine(cls, plan: dict[str, Any]) -> dict[str, Any]:
        return plan_engine_settings(plan)

    @model_validator(mode="after")
    def _plan_keys(self) -> Recipe:
        check_plan_keys(self)
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> Recipe:
        check_unique_names(self)
        return self

    @model_validator(mode="after")
    def _assumed(self) -> Recipe:
        check_assumed(self)
        return self

    @model_validator(mode="after")
    def _dummy_weights(self) -> Recipe:
        check_dummy_weights(self)
        return self

    @model_validator(mode="after")
    def _steps(self) -> Recipe:
        check_steps(self)
        return self

    @model_validator(mode="after")
    def _machines(self) -> Recipe:
        check_machine_layout(self)
        return self

    @model_validator(mode="after")
    def _comparable(self) -> Recipe:
        check_comparable_variants(self)
        return self

    def variant_recipes(self) -> list[tuple[str, Recipe]]:
        """Each variant's own recipe (its engine, model and flags; no variants), in order;
        ``[("", self)]`` when the recipe names none."""
        if not self.variants:
            return [("", self)]
        out: list[tuple[str, Recipe]] = []
        for v in self.variants:
            engine = v.engine or self.engine
            engine = engine.model_copy(update={
                "args": [*engine.args, *v.args],
                "speculative": v.speculative or engine.speculative})
            EngineSpec.model_validate(engine.model_dump())  # args and speculative agree
            own = [a for a in (x.for_variant(v.name) for x in self.assumptions) if a]
            out.append((v.name, self.model_copy(update={
                "engine": engine, "model": v.model or self.model, "variants": [],
                "assumptions": own, "name": self.name,
                "thinking": v.thinking if v.thinking is not None else self.thinking})))
        return out
