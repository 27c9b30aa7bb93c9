"""A step, declared once: its notebook, what it needs, its parameters and its result.

Each module of :mod:`benchlib.pipeline.steps` declares one :class:`Step`. The runner walks
the table of them (:func:`benchlib.pipeline.steps.step_table`); ``tools/make_notebooks.py``
writes each notebook's parameters cell from :attr:`Step.all_params` (``name: type = default
# meaning`` lines, which ``papermill --help-notebook`` reads); a test holds every notebook
against its declaration. Every parameter has a default that lets the notebook run on its
own (opened in JupyterLab, or ``papermill … -p recipe_path params/demo.yaml``); the runner
binds them all (:meth:`Step.runner_params`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from benchlib.pipeline._sidecar import Params, ParamValue
from benchlib.provenance import ModelFiles
from benchlib.recipe import Recipe
from benchlib.runs import Probe, RunFolder

__all__ = ["COMMON_PARAMS", "EngineFacts", "Param", "RunFacts", "Step", "StepInputs"]

ParamType = Literal["str", "int", "float", "bool", "list[str]", "Optional[float]"]
_PYTHON_TYPES: dict[str, object] = {"str": str, "int": int, "float": float, "bool": bool,
                                 "list[str]": list[str], "Optional[float]": float | None}
#: annotations a notebook cannot evaluate as written are quoted (papermill reads both)
_QUOTED = {"Optional[float]"}
Default = ParamValue


class Param(BaseModel):
    """One notebook parameter."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[a-z_][a-z0-9_]*$", description="the notebook's variable")
    type: ParamType = Field(description="its annotation, as --help-notebook shows it")
    default: Default = Field(description="the value a notebook run on its own starts from")
    help: str = Field(description="what it means, one line (--help-notebook shows it)")

    @model_validator(mode="after")
    def _readable(self) -> Param:
        """The default is of the type, and papermill can read the line: it skips a line
        with a second ``=``."""
        self.check(self.default)
        if self.source.count("=") != 1:
            raise ValueError(f"{self.name}: no '=' in the default or the help, please")
        return self

    def check(self, value: Any) -> None:
        """Raise (pydantic's ValidationError) unless ``value`` is of this parameter's type."""
        TypeAdapter(cast(Any, _PYTHON_TYPES[self.type])).validate_python(value, strict=True)

    @property
    def source(self) -> str:
        """The parameters-cell line: ``name: type = default  # help``."""
        annotation = repr(self.type) if self.type in _QUOTED else self.type
        return f"{self.name}: {annotation} = {self.default!r}  # {self.help}"


#: the parameters every step takes, bound by the runner to its run folder
COMMON_PARAMS = (
    Param(name="recipe_path", type="str", default="params/demo.yaml",
          help="recipe: a YAML file (relative: to the working folder, else to the kit) or "
               "a run's recipe.json"),
    Param(name="run_dir", type="str", default="",
          help="run folder; '': none, or (steps that write files) a new one under "
               "outputs/notebooks/"),
    Param(name="results_path", type="str", default="",
          help="where this step's results JSON goes; '': the run folder's .results/, "
               "else nowhere"),
)


class EngineFacts(BaseModel):
    """What the runner knows of the engine it started (empty before it starts one)."""

    base_url: str = Field("", description="where it answers")
    command: str = Field("", description="the command line, secrets redacted")
    log_name: str = Field("", description="its log's name in the run folder")
    startup_s: float | None = Field(None, description="seconds from start to ready")
    launch_error: str = Field("", description="why it did not start; '': it did")


class RunFacts(BaseModel):
    """What earlier steps of a run established for later steps and the provenance."""

    model_config = ConfigDict(frozen=True)

    model: ModelFiles | None = Field(None, description="the model files 01_download used")
    probe: list[Probe] | None = Field(None, description="the fair-A/B probe of the engine "
                                      "(02_launch), set against the other variants'")


class StepInputs(BaseModel):
    """Everything the runner binds a step's parameters from."""

    model_config = ConfigDict(frozen=True)

    folder: RunFolder
    recipe: Recipe
    engine: EngineFacts
    facts: RunFacts

    @property
    def model_path(self) -> Path | None:
        """The model folder: as 01_download left it, else the recipe's local folder."""
        return self.facts.model.path if self.facts.model else self.recipe.model.local_path


R = TypeVar("R", bound=BaseModel)


class Step(BaseModel, Generic[R]):
    """One step of a run and its notebook."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str = Field(pattern=r"^\d\d_[a-z_]+$", description="NN_word: the order and notebook")
    title: str = Field(description="the notebook's heading")
    about: str = Field(description="the notebook's first paragraph: what the step does")
    engine: Literal["none", "start", "ready"] = Field(
        "none", description="none: no engine; start: the runner starts the engine first and "
        "the step reports how that went; ready: the step needs it running (else skipped)")
    scope: Literal["variant", "run"] = Field(
        "variant", description="variant: runs for each variant of the recipe, in the "
        "variant's folder; run: once per run, over every variant (04_compare)")
    requires: tuple[str, ...] = Field(
        (), description="steps that, when this run ran them, must have ended ok")
    params: tuple[Param, ...] = Field((), description="parameters beyond COMMON_PARAMS")
    result: type[R] = Field(description="the results the notebook saves, typed")
    cells: tuple[str, ...] = Field(description="the notebook's code after its parameters")
    bind: Callable[[StepInputs], Params] | None = Field(
        None, description="the runner's values of ``params``")
    apply: Callable[[R, RunFacts], RunFacts] | None = Field(
        None, description="what an ok result tells later steps")

    @property
    def notebook(self) -> str:
        return f"{self.name}.ipynb"

    @property
    def all_params(self) -> tuple[Param, ...]:
        return (*COMMON_PARAMS, *self.params)

    def runner_params(self, inputs: StepInputs) -> Params:
        """The values the runner passes: paths relative to the run folder (the kernel works
        there, and the folder can be moved). Raises when they do not match the declaration."""
        values: Params = {
            "recipe_path": inputs.folder.recipe_json.name, "run_dir": ".",
            "results_path": str(inputs.folder.results(self.name).relative_to(
                inputs.folder.path)),
            **(self.bind(inputs) if self.bind else {})}
        declared = {p.name: p for p in self.all_params}
        if set(values) != set(declared):
            raise TypeError(f"{self.name}: the runner binds {sorted(values)}, the notebook "
                            f"declares {sorted(declared)}")
        for name, value in values.items():
            declared[name].check(value)
        return values

    def read_result(self, folder: RunFolder) -> R | None:
        """The step's saved results, typed; None when it saved none."""
        path = folder.results(self.name)
        if not path.is_file():
            return None
        return self.result.model_validate_json(path.read_text(encoding="utf-8"))
