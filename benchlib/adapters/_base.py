"""What the kit knows about one engine kind: :class:`EngineAdapter`, and the settings its
command is built from (:class:`LaunchInputs`).

An adapter is the one place that names an engine: its command line and where the flags'
parser lives, readiness, the ``/metrics`` names, the memory facts the plan needs, speculative
settings as flags, the distributions that give its version. The generic machinery (starting
process groups, polling readiness, checking flags, scanning logs) lives in
:mod:`benchlib.engines` and asks the adapter; the recipe's checks ask it too, so adding an
engine is one module here and one row of the registry (:mod:`._registry`).

Adapters sit below :mod:`benchlib.recipe` (see :mod:`benchlib._layers`): they see the
recipe's settings as the primitives of :class:`LaunchInputs`, never as recipe models.
"""

from __future__ import annotations

import itertools
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from benchlib._exceptions import UsageError
from benchlib.adapters._memory import MemoryInputs, ReportRow, flag_value
from benchlib.adapters._speculative import Speculative
from benchlib.measure import MetricNames

if TYPE_CHECKING:
    from benchlib.memory import Plan

__all__ = ["CrashHint", "EngineAdapter", "FlagDifferences", "FlagSourceKind", "LaunchInputs",
           "ParallelSizes", "PlanComparison", "slots"]

#: flag → (the flags that replace it, what to write instead)
FlagDifferences = Mapping[str, tuple[tuple[str, ...], str]]
#: where an engine's flag set comes from (:mod:`benchlib.engines._flagsets` reads it):
#: ``parser``: its own parser, built in ``engine.python`` (without one: the pinned release's
#: committed set); ``parser-or-committed``: the same, falling back to the committed set of the
#: installed version; ``committed``: the committed sets only (the installed version read from
#: ``engine.python`` when given); ``help``: ``engine.executable --help``; ``none``: no flags
FlagSourceKind = Literal["parser", "parser-or-committed", "committed", "help", "none"]
#: how ``02_launch`` sets an engine's own memory report beside the plan: ``kv_blocks`` (vLLM's
#: KV blocks, utilization and cache config) or ``n_ctx`` (llama.cpp's context and KV buffer)
PlanComparison = Literal["kv_blocks", "n_ctx"]


def _empty() -> Mapping[str, object]:
    return MappingProxyType({})


def _no_flags() -> Mapping[str, str]:
    return MappingProxyType({})


def _no_differences() -> FlagDifferences:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class CrashHint:
    """A failure an engine's log can show (matched line by line) and what to do about it."""

    name: str
    pattern: re.Pattern[str]
    hint: str


def _no_patterns() -> Mapping[str, re.Pattern[str]]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ParallelSizes:
    """``engine.parallel`` as a command needs it: tensor- and pipeline-parallel sizes and
    vLLM's executor backend (``None``: the engine picks)."""

    tp: int
    pp: int
    backend: str | None = None


@dataclass(frozen=True, slots=True)
class LaunchInputs:
    """The recipe's settings one engine command is built from (``engine.*``, ``model.*``);
    :func:`benchlib.engines.plan_launch` fills it from the recipe."""

    #: ``engine.python``: the interpreter of the engine's environment (None: ``python3``)
    python: Path | None
    #: ``engine.executable``: a server binary (llama.cpp, open-jet)
    executable: Path | None
    #: where the weights are (a folder, or a GGUF file)
    model_path: Path
    #: ``model.served_model_name``: the name requests ask for
    served_name: str
    host: str
    port: int
    #: ``engine.max_model_len``: the context of one request (None: the engine's default)
    max_model_len: int | None = None
    #: ``model.tokenizer``: a local tokenizer folder
    tokenizer: Path | None = None
    #: ``model.weights == "dummy"``: random weights made by the engine from a config
    dummy_weights: bool = False
    #: ``engine.parallel`` (None: not given)
    parallel: ParallelSizes | None = None
    speculative: Speculative = field(default_factory=Speculative)
    #: ``engine.args``: the recipe's own flags, passed last
    args: tuple[str, ...] = ()
    #: ``engine.ready_path``: GET it until it answers 200
    ready_path: str = "/v1/models"

    @property
    def interpreter(self) -> str:
        """The engine's interpreter: ``engine.python``, else ``python3`` on PATH (the
        activated environment of the machine a recipe was written for)."""
        return "python3" if self.python is None else str(self.python)


def slots(args: tuple[str, ...] | list[str]) -> int:
    """llama.cpp's slot count as ``-np N`` / ``--parallel N`` in ``args`` says; else 1 (with
    auto slots llama.cpp shares one KV of -c tokens between them)."""
    for flag, value in itertools.pairwise(args):
        if flag in ("-np", "--parallel") and value.isdigit() and int(value) > 0:
            return int(value)
    return 1


@dataclass(frozen=True)
class EngineAdapter:
    """One engine kind, as the kit drives it. Subclasses override the methods; the fields
    are the facts other packages ask for instead of naming the kind."""

    #: the recipe's ``engine.kind``
    name: str
    #: how prose names it (``vLLM``, ``llama.cpp``)
    label: str
    #: False: the kit starts nothing (an ``endpoint``: the recipe gives ``base_url``)
    starts_process: bool = True
    #: the engine makes random weights from a config alone (``--load-format dummy``)
    dummy_weights: bool = False
    #: the kit passes ``engine.parallel``'s tp and pp sizes
    parallel: bool = False
    #: ``engine.parallel.backend`` (vLLM's ``--distributed-executor-backend``) applies
    executor_backend: bool = False
    #: the kit can plan one engine over several nodes (:mod:`benchlib.engines._cluster`)
    multi_node: bool = False
    #: a Python engine: ``benchlib launch --engine-python`` replaces its ``engine.python``
    takes_python: bool = False
    #: a Python program in an environment of its own, which ``engine.lock`` can hold to a
    #: lock file (:meth:`environment_python`)
    python_program: bool = False
    #: distributions whose installed version is the engine's version, first found wins
    distributions: tuple[str, ...] = ()
    #: its log lines, fact → pattern, read by :func:`benchlib.engines.parse_engine_log`
    #: (``version``, ``kv_cache_tokens`` … as :class:`~benchlib.engines.EngineLogFacts` names
    #: them)
    log_patterns: Mapping[str, re.Pattern[str]] = field(default_factory=_no_patterns)
    #: failures only this engine prints, each with what to do
    crash_hints: tuple[CrashHint, ...] = ()
    #: where each server metric is in its ``/metrics`` (None: not sampled)
    metrics: MetricNames | None = None
    #: PlanConfig settings that make ``00_plan`` also say what this engine reports
    plan_settings: Mapping[str, object] = field(default_factory=_empty)
    #: how ``02_launch`` sets the engine's own memory report beside the plan (None: it
    #: does not); see :mod:`benchlib.pipeline.steps._engine_vs_plan`
    plan_comparison: PlanComparison | None = None
    #: the engine exports ``vllm:cache_config_info`` (its KV blocks) on ``/metrics``
    reports_cache_config: bool = False
    #: flags of the speculative setting: given in ``engine.args`` beside ``speculative``,
    #: the two would fight
    speculative_flags: frozenset[str] = frozenset()
    #: flags ``engine.args`` may not carry at all, and why (the kit passes them)
    reserved_flags: Mapping[str, str] = field(default_factory=_no_flags)
    #: the flags the kit itself passes this engine → the recipe field that sets them (a
    #: flag of ``engine.args`` that repeats one is named by that field)
    kit_flags: Mapping[str, str] = field(default_factory=_no_flags)
    #: flags that changed name or meaning between versions, or belong to another engine
    flag_differences: FlagDifferences = field(default_factory=_no_differences)
    #: different flags of one setting: given beside the kit's, the two would fight
    same_setting: tuple[frozenset[str], ...] = ()
    #: the version of its flag set is comparable with ``engine.version``
    flag_versions_comparable: bool = True
    #: where its flag set comes from (see :data:`FlagSourceKind`)
    flag_source: FlagSourceKind = "none"
    #: Python run in ``engine.python`` that leaves the engine's own parser in ``parser``
    flag_parser: str = ""
    #: what the source of a parser-built set adds after "{dist} {version}'s own parser"
    flag_parser_note: str = ""
    #: its parser takes vLLM's FlexibleArgumentParser spellings (underscores, dotted keys,
    #: ``-O3``)
    flexible_flags: bool = False
    #: the tool that writes its committed flag sets (``{version}``: the version)
    flag_tool: str = ""
    #: why there is no flag set (``none``; ``help`` without ``engine.executable``)
    no_flag_set: str = ""
    #: it refuses a request whose prompt and max tokens reach its context, not only pass it
    #: (SGLang: ``input + max_new_tokens >= context_len``)
    refuses_at_context: bool = False
    #: the flags that set its prefix cache's unit (vLLM's ``--block-size``)
    prefix_block_flags: tuple[str, ...] = ()
    #: that unit when no flag sets it and the engine did not report it: (tokens, why);
    #: None where the kit does not know the engine's cache
    prefix_block_default: tuple[int, str] | None = None

    def prefix_block(self, args: tuple[str, ...] | list[str],
                     settings: Mapping[str, object] | None = None) -> tuple[int, str] | None:
        """The engine's prefix-cache unit in tokens and where it comes from: its flag in
        ``args``, else the block it reported at launch (02_launch's plan settings:
        ``cache_block_reported`` with ``cache_block_from``, the engine's own word, never the
        plan's block), else its default; None where unknown."""
        value = flag_value(tuple(args), *self.prefix_block_flags) \
            if self.prefix_block_flags else None
        if value is not None and value.isdigit():
            return int(value), f"engine.args {self.prefix_block_flags[0]} {value}"
        reported, source = (settings or {}).get("cache_block_reported"), (settings or {}).get(
            "cache_block_from")
        if isinstance(reported, int) and not isinstance(reported, bool) and source:
            return reported, f"{self.label} reported it: {source}"
        return self.prefix_block_default

    def environment_python(self, python: Path | None) -> Path | None:
        """The interpreter whose installed packages are the engine's, as
        :attr:`LaunchInputs.interpreter` starts it (``engine.python``, else ``python3`` on
        PATH); None for an engine that is no Python program, or none found."""
        if not self.python_program:
            return None
        if python is not None:
            return python
        found = shutil.which("python3")
        return None if found is None else Path(found)

    def command(self, launch: LaunchInputs) -> tuple[list[str], str]:
        """The program and the flags the kit always passes, and the path that says ready
        (``launch.ready_path`` unless the engine has a better one). The parallel and
        speculative flags and ``engine.args`` follow (:meth:`argv`)."""
        raise NotImplementedError(f"{self.name} starts no process")

    def read_log(self, text: str) -> dict[str, object]:
        """Facts only this engine's structured log lines carry (its ``log_patterns`` are
        read line by line for every engine), by :class:`~benchlib.engines.EngineLogFacts`'
        field names; none by default."""
        return {}

    def memory_settings(self, cfg: dict[str, Any], m: MemoryInputs
                        ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The :class:`~benchlib.memory.PlanConfig` settings ``cfg`` (the recipe's plan
        settings, the model, ``max_model_len``) as this engine's own settings change them,
        and what else its report needs, shown beside (:mod:`._memory`); unchanged by
        default."""
        return cfg, {}

    def memory_rows(self, p: Plan, facts: Mapping[str, Any], m: MemoryInputs,
                    cfg: Mapping[str, Any], extra: dict[str, Any]) -> list[ReportRow]:
        """Each figure the engine reported (``facts``: its parsed log) beside the plan
        ``p`` made from ``cfg``; none by default (the engine reports no memory)."""
        return []

    def parallel_args(self, par: ParallelSizes | None) -> list[str]:
        """The flags of ``engine.parallel`` every node passes (none without it)."""
        return []

    def headless_argv(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        """The server command ``argv`` as a node that serves no API runs it (a multi-node
        engine's other ranks, :mod:`benchlib.engines._cluster`); the same by default."""
        return argv

    def speculative_args(self, spec: Speculative) -> list[str]:
        """The flags that give the engine its speculative setting; ``[]`` when it is off.
        Raises :class:`~benchlib._exceptions.UsageError` (exit 2) for a method it lacks."""
        if not spec.on:
            return []
        raise self.cannot_speculate(spec)

    def argv(self, launch: LaunchInputs) -> tuple[list[str], str]:
        """The whole command line and the ready path: :meth:`command`, then the parallel
        and speculative flags, then ``engine.args``."""
        argv, ready = self.command(launch)
        argv += [*self.parallel_args(launch.parallel), *self.speculative_args(
            launch.speculative), *launch.args]
        return argv, ready

    def cannot_speculate(self, spec: Speculative) -> UsageError:
        """The refusal of a speculative method the engine does not have."""
        return UsageError("engine.speculative.method", f"{self.name} cannot speculate with "
                          f"{spec.method!r} through the kit; pass the engine's own flags in "
                          "engine.args and say what they do in the variant's name")
