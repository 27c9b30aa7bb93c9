"""Launching real engines: command lines from recipes, their flags checked against the
engine's own parser before anything starts, own process group, readiness (health, then one
real token), log facts and known failures, the priority of busy-polling engine processes
(``engine.nice``), guaranteed teardown. A multi-node engine's
commands are planned node by node (:func:`plan_cluster`) but never started by the kit
(:func:`refuse_multi_node`).

Where this layer sits: ``docs/architecture.md``.
"""

from benchlib.engines._cluster import ClusterPlan, NodeLaunch, plan_cluster, refuse_multi_node
from benchlib.engines._commands import (
    LaunchPlan,
    free_port,
    parallel_args,
    plan_launch,
    redact_argv,
    redact_env,
)
from benchlib.engines._flags import (
    KNOWN_DIFFERENCES,
    FlagCheck,
    check_engine_args,
    check_recipe_args,
)
from benchlib.engines._flagsets import FlagSet, engine_flag_set
from benchlib.engines._logparse import EngineLogFacts, KnownFailure, parse_engine_log
from benchlib.engines._priority import lower_priority, lowered_lines
from benchlib.engines._process import EngineError, EngineProcess
from benchlib.engines._ready import first_token, http_ok

__all__ = [
    "KNOWN_DIFFERENCES",
    "ClusterPlan",
    "EngineError",
    "EngineLogFacts",
    "EngineProcess",
    "FlagCheck",
    "FlagSet",
    "KnownFailure",
    "LaunchPlan",
    "NodeLaunch",
    "check_engine_args",
    "check_recipe_args",
    "engine_flag_set",
    "first_token",
    "free_port",
    "http_ok",
    "lower_priority",
    "lowered_lines",
    "parallel_args",
    "parse_engine_log",
    "plan_cluster",
    "plan_launch",
    "redact_argv",
    "redact_env",
    "refuse_multi_node",
]
