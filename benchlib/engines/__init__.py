"""Launching real engines: command lines from recipes, own process group, readiness
(health, then one real token), log facts and known failures, guaranteed teardown.

Where this layer sits: ``docs/architecture.md``.
"""

from benchlib.engines._commands import LaunchPlan, free_port, plan_launch, redact_argv, redact_env
from benchlib.engines._logparse import EngineLogFacts, KnownFailure, parse_engine_log
from benchlib.engines._process import EngineError, EngineProcess
from benchlib.engines._ready import first_token, http_ok

__all__ = [
    "EngineError",
    "EngineLogFacts",
    "EngineProcess",
    "KnownFailure",
    "LaunchPlan",
    "first_token",
    "free_port",
    "http_ok",
    "parse_engine_log",
    "plan_launch",
    "redact_argv",
    "redact_env",
]
