"""Launching real engines: own process group, log, readiness, teardown."""

from benchlib.engines._process import EngineError, EngineProcess
from benchlib.engines._vllm import vllm_command, vllm_server

__all__ = ["EngineError", "EngineProcess", "vllm_command", "vllm_server"]
