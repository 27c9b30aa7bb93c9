"""Each engine kind's command line, built from a recipe; secrets redacted for the record.

* vLLM: ``python -m vllm.entrypoints.openai.api_server --model … --served-model-name …``
  (the ``vllm`` console script of some builds is broken; the module always works), with
  ``--tokenizer`` for ``model.tokenizer`` and ``--load-format dummy`` for dummy weights
  (SGLang: ``--tokenizer-path``, ``--load-format dummy``).
* SGLang: ``python -m sglang.launch_server --model-path … --served-model-name …`` (still
  supported in 0.5.23, which recommends ``sglang serve``; both read the same parser).
* llama.cpp: ``llama-server -m X.gguf --alias … -c N --metrics -lv 4`` (verbosity 4: the
  log then holds the build, n_ctx and KV cache; ready when ``/health`` answers 200) when
  ``engine.executable`` is given (``make llamacpp`` builds one into
  ``.engines/llamacpp/bin/``), else llama-cpp-python's ``python -m llama_cpp.server --model …
  --model_alias …``.
* open-jet (0.5.1): ``openjet-engine --model X.gguf --host … --port … [--ctx N]``, the
  console script of ``megakernel.server.mk_server:main`` (``python -m megakernel`` with
  ``engine.python``); a ``python3 http.server`` that listens only once the model is loaded
  and warmed up, so ``/health`` answering means ready. OpenAI chat completions only
  (``/v1/chat/completions``, streamed or not, usage with ``stream_options.include_usage``),
  one request at a time; it serves the model under its file name (no alias flag).
* endpoint: nothing to start; the recipe gives the running server's URL.

``engine.parallel`` adds the parallel sizes (vLLM ``--tensor-parallel-size T
--pipeline-parallel-size P [--distributed-executor-backend B]``, SGLang ``--tp-size T
--pp-size P``); what each node of a multi-node engine runs is :mod:`._cluster`'s.
"""

from __future__ import annotations

import itertools
import shlex
import socket
from dataclasses import dataclass, field
from pathlib import Path

from benchlib._secrets import SECRET_FLAGS, expand_env, is_secret_name
from benchlib.engines._speculative import speculative_args
from benchlib.recipe import EngineSpec, ModelSpec

__all__ = ["LaunchPlan", "free_port", "parallel_args", "plan_launch", "redact_argv",
           "redact_env"]


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """What to run and where it will answer. ``argv`` is empty for an ``endpoint``.

    ``argv`` is written with ``${NAME}`` references unexpanded; :meth:`resolved_argv` expands
    them at start time, so the expanded values never sit in a record.
    """

    kind: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    base_url: str = ""
    ready_url: str = ""

    @property
    def recorded_command(self) -> str:
        """The command line as it may be written down: secrets replaced by ``***``."""
        return shlex.join(redact_argv(self.argv)).replace("'***'", "***")

    def resolved_argv(self) -> list[str]:
        return [expand_env(a, "engine.args") for a in self.argv]


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def redact_argv(argv: list[str]) -> list[str]:
    """Replace the values of secret-bearing flags (``--api-key X``, ``--api-key=X``), even
    when given as ``${NAME}`` (which names where the secret lives)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("***")
            hide_next = False
        elif arg in SECRET_FLAGS:
            out.append(arg)
            hide_next = True
        elif arg.split("=", 1)[0] in SECRET_FLAGS and "=" in arg:
            out.append(arg.split("=", 1)[0] + "=***")
        else:
            out.append(arg)
    return out


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: ("***" if is_secret_name(k) else v) for k, v in env.items()}


def _python(engine: EngineSpec) -> str:
    """The engine's interpreter: ``engine.python``, else ``python3`` on PATH (the activated
    environment of the machine a recipe was written for, as the seeds' own commands)."""
    return "python3" if engine.python is None else str(engine.python)


def _slots(args: list[str]) -> int:
    """llama.cpp's slot count as ``-np N`` / ``--parallel N`` in ``args`` says; else 1 (with
    auto slots llama.cpp shares one KV of -c tokens between them)."""
    for flag, value in itertools.pairwise(args):
        if flag in ("-np", "--parallel") and value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def _model_files(tokenizer_flag: str, model: ModelSpec) -> list[str]:
    """vLLM's and SGLang's flags for the model's own tokenizer folder and dummy weights."""
    out = [tokenizer_flag, str(model.tokenizer)] if model.tokenizer is not None else []
    return out + (["--load-format", "dummy"] if model.weights == "dummy" else [])


def parallel_args(engine: EngineSpec) -> list[str]:
    """The flags of ``engine.parallel`` every node passes (none without it): the sizes
    always, so the command says them, and vLLM's executor backend when the recipe names one
    (vLLM picks mp on one node by itself)."""
    par = engine.parallel
    if par is None:
        return []
    if engine.kind == "sglang":
        return ["--tp-size", str(par.tp), "--pp-size", str(par.pp)]
    out = ["--tensor-parallel-size", str(par.tp), "--pipeline-parallel-size", str(par.pp)]
    return out + (["--distributed-executor-backend", par.backend] if par.backend else [])


def plan_launch(engine: EngineSpec, model: ModelSpec, model_path: Path,
                port: int | None = None) -> LaunchPlan:
    """The command for ``engine`` serving ``model_path`` on ``engine.host:port``."""
    if engine.kind == "endpoint":
        assert engine.base_url is not None
        url = engine.base_url.rstrip("/")
        return LaunchPlan("endpoint", [], base_url=url, ready_url=url + engine.ready_path)
    port = port or engine.port or free_port(engine.host)
    name = model.served_model_name
    host = engine.host
    ctx = [str(engine.max_model_len)] if engine.max_model_len else []
    argv: list[str]
    ready_path = engine.ready_path
    if engine.kind == "vllm":
        argv = [_python(engine), "-m", "vllm.entrypoints.openai.api_server",
                "--model", str(model_path), "--served-model-name", name,
                "--host", host, "--port", str(port)]
        if ctx:
            argv += ["--max-model-len", *ctx]
        argv += _model_files("--tokenizer", model)
    elif engine.kind == "sglang":
        argv = [_python(engine), "-m", "sglang.launch_server", "--model-path", str(model_path),
                "--served-model-name", name, "--host", host, "--port", str(port)]
        if ctx:
            argv += ["--context-length", *ctx]
        argv += _model_files("--tokenizer-path", model)
    elif engine.kind == "llamacpp":
        if engine.executable is not None:
            argv = [str(engine.executable), "-m", str(model_path), "--alias", name,
                    "--host", host, "--port", str(port)]
            if engine.max_model_len:
                # max_model_len is per request for every engine; llama.cpp's -c is the whole
                # KV, split over its slots (-np N): N slots of max_model_len each
                argv += ["-c", str(engine.max_model_len * _slots(engine.args))]
            # /metrics exists only when asked for; verbosity 4 prints the build, n_ctx and the
            # KV cache (the library's lines) for the log facts, and ~25 lines per request
            argv += ["--metrics", "-lv", "4"]
            if ready_path == "/v1/models":
                ready_path = "/health"  # 503 while loading, 200 once it can serve
        else:
            argv = [_python(engine), "-m", "llama_cpp.server", "--model", str(model_path),
                    "--model_alias", name, "--host", host, "--port", str(port)]
            if ctx:
                argv += ["--n_ctx", *ctx]
    else:  # openjet: open-jet's megakernel.server.mk_server:main
        if engine.executable is not None:
            argv = [str(engine.executable)]
        elif engine.python is not None:
            argv = [str(engine.python), "-m", "megakernel"]
        else:
            argv = ["openjet-engine"]
        argv += ["--model", str(model_path), "--host", host, "--port", str(port)]
        if ctx:
            argv += ["--ctx", *ctx]
        if ready_path == "/v1/models":
            ready_path = "/health"
    argv += [*parallel_args(engine), *speculative_args(engine), *engine.args]
    base = f"http://{host}:{port}"
    return LaunchPlan(engine.kind, argv, env=dict(engine.env), base_url=base,
                      ready_url=base + ready_path)
