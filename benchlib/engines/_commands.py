"""Each engine kind's command line, built from a recipe by the kind's adapter
(:mod:`benchlib.adapters`: vLLM's ``python -m vllm.entrypoints.openai.api_server``,
llama.cpp's ``llama-server … --metrics -lv 4``, …); secrets redacted for the record.

:func:`plan_launch` turns the recipe's ``engine`` and ``model`` into the adapter's
:class:`~benchlib.adapters.LaunchInputs` and asks it for the argv (its own flags, then
``engine.parallel``'s, the speculative setting's and ``engine.args``) and the ready path; an
adapter that starts nothing (an ``endpoint``) gives the recipe's URL instead. What each node
of a multi-node engine runs is :mod:`._cluster`'s.
"""

from __future__ import annotations

import random
import shlex
import socket
from dataclasses import dataclass, field
from pathlib import Path

from benchlib._secrets import SECRET_FLAGS, expand_env, is_secret_name
from benchlib.adapters import LaunchInputs, ParallelSizes, adapter
from benchlib.recipe import EngineSpec, ModelSpec

__all__ = ["LaunchPlan", "free_port", "launch_inputs", "parallel_args", "parallel_sizes",
           "plan_launch", "redact_argv", "redact_env"]


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """What to run and where it will answer. ``argv`` is empty for an ``endpoint`` (an
    adapter that starts nothing).

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


#: where Linux says its ephemeral ports are (what ``connect`` and ``bind(0)`` hand out)
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: ports below this are left to system services
_LOWEST_PICK = 20000


def free_port(host: str = "127.0.0.1", ephemeral: Path = EPHEMERAL_RANGE_FILE) -> int:
    """A port nobody listens on right now, for an engine to bind in a moment.

    Taken from below the ephemeral range where there is room (``[20000, low)``), not from
    ``bind(0)``: between this check and the engine's bind, any outgoing connection on the
    host (a load test's thousand) may be handed an ephemeral port, and one handed this one
    would stop the engine with "address already in use". Only another picker could take a
    port out of that range, and it checks by binding too. Where the range cannot be read
    (not Linux) or leaves no room, ``bind(0)``.
    """
    try:
        low = int(ephemeral.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    if low - _LOWEST_PICK >= 1000:
        picks = random.SystemRandom()
        for _ in range(64):
            port = picks.randrange(_LOWEST_PICK, low)
            with socket.socket() as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
                return port
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


def parallel_sizes(engine: EngineSpec) -> ParallelSizes | None:
    """``engine.parallel`` as the adapters take it (None: not given)."""
    par = engine.parallel
    return None if par is None else ParallelSizes(par.tp, par.pp, par.backend)


def launch_inputs(engine: EngineSpec, model: ModelSpec, model_path: Path, port: int
                  ) -> LaunchInputs:
    """The settings of ``engine`` and ``model`` an adapter builds a command from."""
    return LaunchInputs(
        python=engine.python, executable=engine.executable, model_path=model_path,
        served_name=model.served_model_name, host=engine.host, port=port,
        max_model_len=engine.max_model_len, tokenizer=model.tokenizer,
        dummy_weights=model.weights == "dummy", parallel=parallel_sizes(engine),
        speculative=engine.speculative, args=tuple(engine.args), ready_path=engine.ready_path)


def parallel_args(engine: EngineSpec) -> list[str]:
    """The flags of ``engine.parallel`` every node passes (none without it), the adapter's."""
    return adapter(engine.kind).parallel_args(parallel_sizes(engine))


def plan_launch(engine: EngineSpec, model: ModelSpec, model_path: Path,
                port: int | None = None) -> LaunchPlan:
    """The command for ``engine`` serving ``model_path`` on ``engine.host:port``."""
    kind = adapter(engine.kind)
    if not kind.starts_process:
        assert engine.base_url is not None
        url = engine.base_url.rstrip("/")
        return LaunchPlan(engine.kind, [], base_url=url, ready_url=url + engine.ready_path)
    port = port or engine.port or free_port(engine.host)
    argv, ready_path = kind.argv(launch_inputs(engine, model, model_path, port))
    base = f"http://{engine.host}:{port}"
    return LaunchPlan(engine.kind, argv, env=dict(engine.env), base_url=base,
                      ready_url=base + ready_path)
