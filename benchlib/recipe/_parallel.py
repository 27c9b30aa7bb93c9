"""How an engine spreads over GPUs and machines: ``engine.parallel`` (tensor × pipeline
parallel sizes, vLLM's executor backend, node 0's address), with ``hardware.nodes`` and
``hardware.gpu_count`` (GPUs per node) the machines it spans.

One field per fact: the node count is ``hardware.nodes`` (what the run expects to find, as
the issue and the provenance name it), the GPUs of each node ``hardware.gpu_count``; the
engine's block says only how it uses them. :func:`parallel_problems` holds the two to each
other (``tp × pp`` must be every GPU of every node), naming the field to change, so a recipe
that cannot start is refused when it is read (exit 2), not after the weights are downloaded.

The commands each node runs are :mod:`benchlib.engines._cluster`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib.adapters import ADAPTERS, adapter

if TYPE_CHECKING:
    from benchlib.recipe._schema import EngineSpec, HardwareSpec

__all__ = ["DEFAULT_INIT_PORTS", "Parallel", "check_engine_parallel", "check_machines",
           "parallel_problems"]

#: the port node 0 listens on for the other nodes, by how they join: Ray's GCS (``ray start
#: --head``'s default), vLLM's torch.distributed master (``--master-port``'s default), and the
#: port SGLang's multi-node examples give ``--dist-init-addr`` (``dist-init``)
DEFAULT_INIT_PORTS = {"ray": 6379, "mp": 29501, "dist-init": 5000}


class Parallel(BaseModel):
    """``engine.parallel``: the tensor- and pipeline-parallel sizes the kit passes (vLLM's
    ``--tensor-parallel-size``/``--pipeline-parallel-size``, SGLang's ``--tp-size``/
    ``--pp-size``), and on several nodes how they join."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tp: int = Field(1, ge=1, description="tensor-parallel size, over all nodes")
    pp: int = Field(1, ge=1, description="pipeline-parallel size: layers split into pp "
                    "stages (vLLM's advice across nodes: tp = GPUs per node, pp = nodes)")
    backend: Literal["ray", "mp"] | None = Field(
        None, description="vLLM's --distributed-executor-backend: ray (a Ray cluster the "
        "nodes join; default on several nodes) or mp (vLLM ≥ 0.11's --nnodes/--node-rank/"
        "--master-addr, no Ray); SGLang takes none (its own --nnodes/--dist-init-addr)")
    head: str | None = Field(None, description="node 0's host name or address, as the other "
                             "nodes reach it (several nodes; default: the placeholder "
                             "HEAD_ADDR in the printed commands)")
    init_port: int | None = Field(
        None, ge=1, le=65535, description="the port node 0 listens on for the others "
        "(default: Ray's 6379, vLLM's --master-port 29501, SGLang's --dist-init-addr 5000)")

    @property
    def world_size(self) -> int:
        """GPUs the engine uses: ``tp × pp``."""
        return self.tp * self.pp

    def label(self, nodes: int = 1) -> str:
        """How reports name it: ``tp 8 × pp 2 over 2 nodes (ray)``."""
        text = f"tp {self.tp} × pp {self.pp}"
        if nodes > 1:
            text += f" over {nodes} nodes"
        return text + (f" ({self.backend})" if self.backend else "")


def parallel_problems(engine: EngineSpec, hardware: HardwareSpec, where: str = "engine"
                      ) -> list[tuple[str, str]]:
    """``(field, message)`` for each way ``engine`` and ``hardware`` disagree about the GPUs
    and machines; ``where`` is where the engine sits in the recipe (``variants[1].engine``)."""
    nodes, per_node = hardware.nodes, hardware.gpu_count
    par = engine.parallel
    starts = adapter(engine.kind).starts_process
    out: list[tuple[str, str]] = []
    if nodes > 1 and starts:
        if not adapter(engine.kind).multi_node:
            return [("hardware.nodes", f"{nodes} nodes: the kit spreads only "
                     f"{_labels('multi_node')} over several machines, not {engine.kind}")]
        if par is None:
            return [(f"{where}.parallel", f"hardware.nodes is {nodes}: say how the engine "
                     "spans them, e.g. parallel: {tp: <GPUs per node>, pp: " + str(nodes)
                     + "}")]
        if per_node is None:
            return [("hardware.gpu_count", f"hardware.nodes is {nodes}: give the GPUs of "
                     "each node (hardware.gpu_count), which tp × pp must use")]
    if par is None or not starts:
        return out
    if per_node is not None and par.world_size != nodes * per_node and (
            nodes > 1 or par.world_size > per_node):
        want = f"{nodes} nodes × {per_node} GPUs = {nodes * per_node}" if nodes > 1 else \
            f"at most hardware.gpu_count {per_node}"
        out.append((f"{where}.parallel", f"tp {par.tp} × pp {par.pp} = {par.world_size} "
                    f"GPUs, but the hardware has {want}: change tp/pp or hardware.nodes/"
                    "gpu_count"))
    if nodes == 1 and (par.head or par.init_port):
        out.append((f"{where}.parallel", "head and init_port are for several nodes "
                    "(hardware.nodes is 1)"))
    return out


def _labels(fact: str) -> str:
    """The engines with ``fact`` (an adapter's bool field) as prose: ``vLLM and SGLang``."""
    names = [a.label for a in ADAPTERS.values() if getattr(a, fact)]
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def check_engine_parallel(kind: str, par: Parallel | None) -> None:
    """Raise ``ValueError`` when ``engine.parallel`` does not suit the engine ``kind``."""
    if par is not None and not adapter(kind).parallel:
        raise ValueError(f"engine.parallel: the kit sets parallel sizes for "
                         f"{_labels('parallel')} only, not {kind} (give its own flags in args)")
    if par is not None and par.backend and not adapter(kind).executor_backend:
        raise ValueError("engine.parallel.backend is vLLM's; SGLang joins its nodes itself "
                         "(--nnodes, --node-rank, --dist-init-addr)")


def check_machines(hardware: HardwareSpec, engines: Sequence[tuple[str, EngineSpec]]) -> None:
    """Raise ``ValueError`` naming, field by field, every way the recipe's engines (``where``
    they sit, engine) and its hardware disagree (:func:`parallel_problems`)."""
    problems = [p for where, e in engines for p in parallel_problems(e, hardware, where)]
    if problems:  # pydantic names no field for a recipe-wide check: each message names its own
        raise ValueError("; ".join(f"{field}: {msg}" for field, msg in dict.fromkeys(problems)))
