"""What each node of a multi-node engine runs, planned from a recipe; and why the kit itself
does not run them.

A model too large for one machine (seed 000's GLM-5.2 in BF16: two nodes of 8 × B200) is one
engine over several nodes, joined one of three ways, as the engines document them:

* vLLM over Ray (``engine.parallel.backend: ray``, the default on several nodes): node 0 runs
  ``ray start --head --port 6379``, every other node ``ray start --address HEAD:6379``, then
  node 0 alone runs the server with ``--tensor-parallel-size T --pipeline-parallel-size P
  --distributed-executor-backend ray``; Ray places the T × P workers on the cluster's GPUs.
* vLLM without Ray (``backend: mp``, vLLM ≥ 0.11, vllm-project/vllm#23691): every node runs
  the same server command with ``--nnodes N --node-rank R --master-addr HEAD --master-port
  29501``; the others add ``--headless`` (no API), which only the ``vllm serve`` entry point
  reads, so they run ``python -m vllm.entrypoints.cli.main serve``.
* SGLang: every node runs the same ``sglang.launch_server`` command with ``--nnodes N
  --node-rank R --dist-init-addr HEAD:5000``; node 0 serves the API.

Every vLLM and SGLang flag here is checked against the engine's flag set with the recipe's
own (:mod:`._flags`); Ray's ``ray start`` flags are Ray's CLI, which no flag set holds.

benchlib starts engines on the machine it runs on only: it has no way onto the other nodes
(no SSH, no scheduler), so :func:`refuse_multi_node` stops a run of such a recipe before
anything starts, saying what to run on each node and how to measure the result (an
``endpoint`` recipe pointed at node 0).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from benchlib._exceptions import UsageError
from benchlib.adapters import ADAPTERS, adapter
from benchlib.engines._commands import plan_launch, redact_argv, redact_env
from benchlib.recipe import DEFAULT_INIT_PORTS, EngineSpec, ModelSpec, Recipe

__all__ = ["HEAD_PLACEHOLDER", "ClusterPlan", "NodeLaunch", "plan_cluster",
           "refuse_multi_node"]

#: node 0's address in the printed commands when ``engine.parallel.head`` is not given
HEAD_PLACEHOLDER = "HEAD_ADDR"
#: the HTTP port of a multi-node server when ``engine.port`` is not given (a free port of
#: this machine says nothing about node 0's)
DEFAULT_HTTP_PORT = 8000


@dataclass(frozen=True, slots=True)
class NodeLaunch:
    """One node's part: its commands, in order, each run with ``env`` added."""

    rank: int
    role: str
    commands: tuple[tuple[str, ...], ...]
    env: dict[str, str]

    def text(self, nodes: int) -> str:
        """The node's block as ``--dry-run`` prints it: a heading, then one line a command,
        secrets replaced by ``***``."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in redact_env(self.env).items())
        lines = [f"# node {self.rank} of {nodes}: {self.role}"]
        for argv in self.commands:
            line = shlex.join(redact_argv(list(argv))).replace("'***'", "***")
            lines.append((env + " " if env else "") + line)
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    """Every node's commands, where the API will answer, and in what order to start them."""

    kind: str
    how: str
    nodes: tuple[NodeLaunch, ...]
    base_url: str
    order: str
    #: node 0's server command as the single-node plan writes it (the flags every node shares)
    serve: tuple[str, ...] = ()
    #: the flags each node adds to it (``--nnodes``, ``--node-rank``, ``--headless`` …)
    node_flags: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()

    def text(self) -> str:
        """One block a node, then the order to start them in and what to watch for."""
        blocks = [n.text(len(self.nodes)) for n in self.nodes]
        tail = [f"# {self.order}", f"# then the API answers at {self.base_url}"]
        tail += [f"# {note}" for note in self.notes]
        return "\n".join([*blocks, *tail])



def _ray(engine: EngineSpec) -> str:
    """Ray's CLI beside the engine's interpreter (the environment vLLM imports Ray from)."""
    return "ray" if engine.python is None else str(engine.python.parent / "ray")


def plan_cluster(engine: EngineSpec, model: ModelSpec, model_path: Path, nodes: int
                 ) -> ClusterPlan:
    """The commands of ``engine`` (vLLM or SGLang, with ``engine.parallel``) serving
    ``model_path`` over ``nodes`` machines; each node must hold the model at that path."""
    par = engine.parallel
    kind = adapter(engine.kind)
    if not kind.multi_node or par is None or nodes < 2:
        able = " or ".join(a.label for a in ADAPTERS.values() if a.multi_node)
        raise UsageError("hardware.nodes", f"a multi-node plan needs {able} with "
                         f"engine.parallel and hardware.nodes ≥ 2 (got {engine.kind}, "
                         f"{nodes} node(s))")
    # an engine with an executor backend (vLLM) joins by Ray or by its own mp; one without
    # (SGLang) by its --dist-init-addr
    backend = (par.backend or "ray") if kind.executor_backend else "dist-init"
    head = par.head or HEAD_PLACEHOLDER
    init = par.init_port or DEFAULT_INIT_PORTS[backend]
    port = engine.port or DEFAULT_HTTP_PORT
    engine = engine.model_copy(update={"port": port, "parallel": par.model_copy(
        update={"backend": backend if kind.executor_backend else None})})
    serve = plan_launch(engine, model, model_path, port=port)
    argv, env = tuple(serve.argv), dict(serve.env)
    joined = f"{head}:{init}"
    api = f"the server (http://{head}:{port})"
    launches: list[NodeLaunch] = []
    extra: list[tuple[str, ...]] = []
    if backend == "ray":
        ray = _ray(engine)
        launches.append(NodeLaunch(0, f"Ray's head, then {api}", (
            (ray, "start", "--head", "--port", str(init)), argv), env))
        launches += [NodeLaunch(r, f"joins the Ray cluster at {joined}", (
            (ray, "start", "--address", joined),), env) for r in range(1, nodes)]
        how = f"{kind.label} over a Ray cluster of {nodes} nodes"
        order = (f"start node 0's ray first, then every other node's; run node 0's server "
                 f"once `{ray} status` counts {nodes} nodes")
    else:
        def ranked(r: int) -> tuple[str, ...]:
            flags: tuple[str, ...] = ("--nnodes", str(nodes), "--node-rank", str(r))
            if backend == "dist-init":
                flags += ("--dist-init-addr", joined)
            else:
                flags += ("--master-addr", head, "--master-port", str(init))
            if backend == "mp" and r > 0:
                flags += ("--headless",)  # no API on this node; only `vllm serve` reads it
            extra.append(flags)
            if backend == "dist-init" or r == 0:
                return (*argv, *flags)
            return (*kind.headless_argv(argv), *flags)

        launches.append(NodeLaunch(0, api, (ranked(0),), env))
        what = "its share of the model (no API)"
        launches += [NodeLaunch(r, what, (ranked(r),), env) for r in range(1, nodes)]
        how = (f"{kind.label} over {nodes} nodes (--dist-init-addr {joined})"
               if backend == "dist-init"
               else f"{kind.label}'s multiprocessing executor over {nodes} nodes (no Ray)")
        order = (f"start the {nodes} nodes' commands in any order: they wait for each other "
                 f"at {joined}, and node 0 serves once every rank has joined")
    notes = [f"every node needs {model_path} (the same files at the same path, or the hub id "
             "fetched on each) and the same engine version"]
    if par.head is None:
        notes.append(f"{HEAD_PLACEHOLDER}: node 0's address as the others reach it "
                     "(engine.parallel.head)")
    if engine.host in ("127.0.0.1", "localhost"):
        notes.append(f"engine.host {engine.host}: the API answers on node 0 only; 0.0.0.0 "
                     "lets another machine measure it")
    return ClusterPlan(engine.kind, how, tuple(launches), f"http://{head}:{port}", order,
                       argv, tuple(extra), tuple(notes))


def refuse_multi_node(recipe: Recipe) -> None:
    """Raise :class:`~benchlib._exceptions.UsageError` (exit 2) when ``recipe`` would start
    an engine over several nodes, with each node's commands and how to measure it instead;
    an ``endpoint`` recipe (the engine already running) passes, whatever its node count."""
    nodes = recipe.hardware.nodes
    pairs = [(n, r) for n, r in recipe.variant_recipes()
             if adapter(r.engine.kind).starts_process]
    if nodes < 2 or not pairs:
        return
    blocks = []
    for name, sub in pairs:
        plan = plan_cluster(sub.engine, sub.model, sub.model.local_path or Path(sub.model.id),
                            nodes)
        head = f"# variant {name}: {plan.how}\n" if name else f"# {plan.how}\n"
        blocks.append(head + plan.text())
    url = plan_cluster(pairs[0][1].engine, pairs[0][1].model, Path("MODEL"), nodes).base_url
    raise UsageError("hardware.nodes", (
        f"{recipe.name} spans {nodes} nodes, and benchlib starts engines only on the machine "
        "it runs on: it cannot reach the others, so it starts none of them. Start the engine "
        "yourself, on each node:\n\n" + "\n\n".join(blocks) + "\n\nthen measure it: set "
        f"engine.kind: endpoint and engine.base_url: {url} in the recipe (keep hardware, so "
        "the record says what it ran on) and run it again. (A run on real multi-node "
        "hardware has not been made with this kit: these commands are the engines' "
        "documented ones, their flags checked against the engines' own.)"))
