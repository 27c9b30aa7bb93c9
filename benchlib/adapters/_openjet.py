"""open-jet (0.5.1): ``openjet-engine --model X.gguf --host … --port … [--ctx N]``, the console
script of ``megakernel.server.mk_server:main`` (``python -m megakernel`` with
``engine.python``, ``engine.executable`` when given); a ``python3 http.server`` that listens
only once the model is loaded and warmed up, so ``/health`` answering means ready. OpenAI chat
completions only (``/v1/chat/completions``, streamed or not, usage with
``stream_options.include_usage``), one request at a time; it serves the model under its file
name (no alias flag).

Speculative: ``-d k``, the MTP depth; off is ``-d 0`` (its default is depth 4, so "off" must
be said), which is why ``engine.args`` may not carry ``-d`` itself.
"""

from __future__ import annotations

from types import MappingProxyType

from benchlib.adapters._base import EngineAdapter, LaunchInputs
from benchlib.adapters._speculative import Speculative

__all__ = ["OPENJET"]

_DEPTH = ("open-jet's MTP depth (-d) comes from speculative (method mtp with k; off sends "
          "-d 0)")


class _Openjet(EngineAdapter):
    def command(self, launch: LaunchInputs) -> tuple[list[str], str]:
        if launch.executable is not None:
            argv = [str(launch.executable)]
        elif launch.python is not None:
            argv = [str(launch.python), "-m", "megakernel"]
        else:
            argv = ["openjet-engine"]
        argv += ["--model", str(launch.model_path), "--host", launch.host,
                 "--port", str(launch.port)]
        if launch.max_model_len:
            argv += ["--ctx", str(launch.max_model_len)]
        ready = "/health" if launch.ready_path == "/v1/models" else launch.ready_path
        return argv, ready

    def speculative_args(self, spec: Speculative) -> list[str]:
        if spec.method in ("off", "mtp") and not spec.options:
            return ["-d", str(spec.k or 0)]
        raise self.cannot_speculate(spec)


OPENJET = _Openjet(
    kit_flags=MappingProxyType({
        "--model": "model", "--host": "engine.host", "--port": "engine.port",
        "--ctx": "engine.max_model_len"}),
    name="openjet", label="open-jet", distributions=("open-jet",),
    reserved_flags=MappingProxyType({"-d": _DEPTH, "--draft": _DEPTH}),
    flag_source="committed", flag_tool="tools/engine_flags.py openjet {version}",
    flag_differences=MappingProxyType({
        "--ctx-size": (("--ctx",), "llama-server's name; openjet-engine's is -c/--ctx"),
        "--alias": ((), "openjet-engine has no alias: it serves the model under its file name"),
        "--draft-max": (("--draft",), "llama-server's name; openjet-engine's is -d/--draft N"),
        "--n-gpu-layers": ((), "openjet-engine runs the whole model on the GPU: no layer flag"),
    }),
)
