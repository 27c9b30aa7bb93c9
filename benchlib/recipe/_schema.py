"""The recipe schema: what ``params/*.yaml`` may say, checked strictly.

Every model forbids unknown keys (a misspelt key is an error, not a silent default). Revisions,
commits and versions must be strings: YAML reads ``0123456`` as the number 42798 and ``1.10``
as 1.1, so a number there is refused with a hint to quote it. Secrets are never values: a
recipe names the environment variable that holds them (``api_key_env``, ``hf_token_env``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from benchlib._exceptions import validation_message
from benchlib._secrets import SECRET_FLAGS, is_env_ref, is_secret_name
from benchlib.adapters import (
    ADAPTERS,
    PLANNED_KINDS,
    SPECULATIVE_FLAGS,
    EngineKind,
    Speculative,
    adapter,
)
from benchlib.measure import (
    EndpointSetting,
    MeasureConfig,
    OutputLen,
    RequestTimeout,
    Warmups,
    Workload,
)
from benchlib.recipe._accuracy import AccuracySpec
from benchlib.recipe._assumptions import Assumption, check_assumptions
from benchlib.recipe._fair import check_comparable
from benchlib.recipe._parallel import Parallel, check_engine_parallel, check_machines
from benchlib.recipe._parts import (
    CompareSpec,
    EnvName,
    FunctionalChecks,
    HardwareSpec,
    Pin,
    _Strict,
)

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


#: the engines that make random weights from a config alone (``--load-format dummy``)
DUMMY_WEIGHT_ENGINES = tuple(k for k, a in ADAPTERS.items() if a.dummy_weights)

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
        starts = adapter(self.kind).starts_process
        if not starts and not self.base_url:
            raise ValueError(f"engine.kind {self.kind} needs engine.base_url")
        if not starts and self.nice:
            raise ValueError("engine.nice: the kit starts no process for an endpoint")
        check_engine_parallel(self.kind, self.parallel)
        if self.base_url is not None and not self.base_url.startswith(("http://", "https://")):
            raise ValueError("engine.base_url must start with http:// or https://")
        if (self.ca_bundle is not None or self.insecure) and not (
                self.base_url or "").startswith("https://"):
            raise ValueError("engine.ca_bundle and engine.insecure are for an https:// "
                             "engine.base_url")
        for flag, value in zip(self.args, self.args[1:], strict=False):
            if flag in SECRET_FLAGS and not is_env_ref(value):
                raise ValueError(f"engine.args: write {flag} ${{NAME}} and export NAME; a "
                                 "secret's value never goes into a recipe")
        for arg in self.args:
            name, eq, value = arg.partition("=")
            if eq and name in SECRET_FLAGS and not is_env_ref(value):
                raise ValueError(f"engine.args: write {name}=${{NAME}} and export NAME")
        if any(is_secret_name(k) for k in self.env):
            raise ValueError("engine.env must not hold secrets; name the variable in "
                             "api_key_env / model.hf_token_env and export it instead")
        given = {a.split("=", 1)[0] for a in self.args}
        reserved = adapter(self.kind).reserved_flags
        for flag in sorted(given & set(reserved)):
            raise ValueError(f"engine.args: {reserved[flag]}")
        if self.speculative.on and SPECULATIVE_FLAGS & given:
            raise ValueError("engine.args: the speculative setting goes in speculative "
                             "(method, k, draft_model, options), not in args as well")
        return self


class Scenario(Workload):
    """One workload, measured at each concurrency in turn.

    Its settings are :class:`~benchlib.measure.Workload`'s (the same fields, descriptions
    and checks as ``benchlib measure``'s flags), with a recipe's defaults (chat, one warmup)
    and its YAML key ``request_timeout_s``; :meth:`measure_config` turns it into a run's
    :class:`~benchlib.measure.MeasureConfig`.
    """

    # the snapshot (recipe.json) keeps the YAML's keys, so it loads back as a recipe
    model_config = ConfigDict(serialize_by_alias=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="unique within the recipe: "
                      "names the scenario's results and files")
    endpoint: EndpointSetting = "chat"
    output_len: OutputLen = 128
    num_warmups: Warmups = 1
    request_timeout: Annotated[RequestTimeout, Field(alias="request_timeout_s")] = 600.0
    concurrencies: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1], min_length=1,
        description="max_concurrency of each measurement, in order")
    num_prompts: int | list[Annotated[int, Field(ge=1)]] = Field(
        8, description="per concurrency: one number for all, or one per concurrency")
    ramp_input_lens: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list,
        description="long-context ramp: one request per input length, in order, at "
                    "concurrency 1, stopping at the first failure (seed 003's test)")
    sdk_view: bool = Field(
        False, description="after each concurrency, send the same shape of requests (next "
                           "seed) through the openai SDK's streaming client and report what "
                           "an application sees beside the wire figures (results' sdk block)")
    max_failed_fraction: float = Field(
        0.0, ge=0.0, le=1.0,
        description="failed requests a concurrency may have, as a fraction of those sent, "
                    "and still count as done (a resumed run measures it again otherwise; "
                    "the step fails); 0: any failure is measured again")

    @model_validator(mode="after")
    def _shape(self) -> Scenario:
        if isinstance(self.num_prompts, int):
            if self.num_prompts < 1:
                raise ValueError("num_prompts must be ≥ 1")
        elif len(self.num_prompts) != len(self.concurrencies):
            raise ValueError(f"num_prompts lists {len(self.num_prompts)} counts for "
                             f"{len(self.concurrencies)} concurrencies")
        if self.ramp_input_lens and self.dataset != "random":
            raise ValueError("ramp_input_lens needs the random dataset")
        if self.ramp_input_lens != sorted(self.ramp_input_lens):
            raise ValueError("ramp_input_lens must go up")
        prompts = [self.num_prompts] if isinstance(self.num_prompts, int) else self.num_prompts
        least = min(*self.concurrencies, *prompts, *([1] if self.ramp_input_lens else []))
        if self.workers is not None and self.workers > least:
            raise ValueError(f"workers {self.workers}: a measurement here has only {least} "
                             "requests or slots, and each worker needs one")
        return self

    @property
    def request_timeout_s(self) -> float:
        """The YAML key's spelling of :attr:`request_timeout`."""
        return self.request_timeout

    def measure_config(self, *, base_url: str, model: str, tokenizer: Path | None,
                       result_json: Path | None, max_concurrency: int | None,
                       num_prompts: int, input_len: int | None = None,
                       num_warmups: int | None = None, disable_tqdm: bool = True,
                       ca_bundle: Path | None = None, insecure: bool = False,
                       seed: int | None = None) -> MeasureConfig:
        """The run of this scenario at one concurrency (or one ramp length): every workload
        setting as the recipe gives it; ``input_len``, ``num_warmups`` and ``seed`` override
        the scenario's (a ramp step: its length, no warmup; a later concurrency: its own
        seed, :func:`~benchlib.measure.concurrency_seed`)."""
        workload = {name: getattr(self, name) for name in Workload.model_fields}
        if input_len is not None:
            workload["input_len"] = input_len
        if num_warmups is not None:
            workload["num_warmups"] = num_warmups
        if seed is not None:
            workload["seed"] = seed
        return MeasureConfig(**workload, base_url=base_url, model=model, tokenizer=tokenizer,
                             result_json=result_json, max_concurrency=max_concurrency,
                             num_prompts=num_prompts, disable_tqdm=disable_tqdm,
                             ca_bundle=ca_bundle, insecure=insecure)

    def prompts_at(self, index: int) -> int:
        """The number of prompts to send at ``concurrencies[index]``."""
        n = self.num_prompts
        return n if isinstance(n, int) else n[index]


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
        """``plan.engine: KIND``, the engine whose own report the plan adds, becomes that
        engine's plan settings (its adapter's ``plan_settings``; given settings win)."""
        if "engine" not in plan:
            return plan
        kind = plan["engine"]
        if kind not in PLANNED_KINDS:
            raise ValueError(f"plan.engine: one of {', '.join(PLANNED_KINDS)} (got {kind!r})")
        off = {key: False for a in ADAPTERS.values() for key in a.plan_settings}
        rest = {key: value for key, value in plan.items() if key != "engine"}
        return off | dict(adapter(kind).plan_settings) | rest

    @model_validator(mode="after")
    def _plan_keys(self) -> Recipe:
        from benchlib.memory import PlanConfig

        if "model" in self.plan:
            raise ValueError("plan.model is not a setting: the plan reads the model's "
                             "config.json from model.local_path or the hub")
        try:
            PlanConfig(model=Path("config.json"), **self.plan)
        except ValidationError as exc:
            raise ValueError(validation_message(exc, prefix="plan.")) from None
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> Recipe:
        names = [s.name for s in self.scenarios]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"scenario names must be unique: {', '.join(dupes)}")
        variants = [v.name for v in self.variants]
        dupes = sorted({n for n in variants if variants.count(n) > 1})
        if dupes:
            raise ValueError(f"variant names must be unique: {', '.join(dupes)}")
        return self

    @model_validator(mode="after")
    def _assumed(self) -> Recipe:
        check_assumptions(self.assumptions, [s.name for s in self.scenarios],
                          [v.name for v in self.variants], type(self).model_fields)
        return self

    @model_validator(mode="after")
    def _dummy_weights(self) -> Recipe:
        for name, r in self.variant_recipes():
            if r.model.weights == "dummy" and r.engine.kind not in DUMMY_WEIGHT_ENGINES:
                where = f"variants[{name}]" if name else "model"
                raise ValueError(f"{where}: weights dummy needs an engine that makes them "
                                 f"({', '.join(DUMMY_WEIGHT_ENGINES)}: --load-format dummy), "
                                 f"not {r.engine.kind}")
        return self

    @model_validator(mode="after")
    def _steps(self) -> Recipe:
        if not self.scenarios and "03_measure" in self.steps:
            raise ValueError("scenarios: at least one, unless steps leaves out 03_measure "
                             "(a start-only run: the engine started, its memory report and "
                             "/metrics read, stopped)")
        return self

    @model_validator(mode="after")
    def _machines(self) -> Recipe:
        check_machines(self.hardware, [("engine", self.engine)] + [
            (f"variants[{i}].engine", v.engine) for i, v in enumerate(self.variants) if v.engine])
        return self

    @model_validator(mode="after")
    def _comparable(self) -> Recipe:
        check_comparable(self.variant_recipes(), self.compare.differences)
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
            out.append((v.name, self.model_copy(update={
                "engine": engine, "model": v.model or self.model, "variants": [],
                "thinking": v.thinking if v.thinking is not None else self.thinking,
                "name": self.name})))
        return out
