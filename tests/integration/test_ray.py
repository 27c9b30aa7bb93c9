"""``benchlib measure --ray-address``: load from the nodes of a Ray cluster.

The test starts a real two-node Ray cluster on this host (two raylets, each its own node:
Ray's own ``cluster_utils``), and measures the scripted server through it: one
worker per node by default, each request timed on its node and on the wire's truth, the
clock offset of each node measured and reported, every record in the one file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchlib.engines import free_port
from benchlib.measure import MeasureResult, read_requests, requests_path

from ..conftest import REPO, ScriptedServerProcess
from ._truth import errors_vs_truth


def _node() -> dict[str, Any]:
    # fixed agent ports: a raylet given port 0 waits for its agents to write theirs, and on
    # two busy cores the metrics agent's start can outlast Ray's 30 s registration limit
    return {"num_cpus": 1, "object_store_memory": 80 * 2**20, "metrics_agent_port": free_port(), "runtime_env_agent_port": free_port(),
            "dashboard_agent_listen_port": free_port(), "metrics_export_port": free_port()}


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A two-node Ray cluster on this host; its head's address."""
    from ray.cluster_utils import Cluster

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no report home from a test
    cluster = Cluster(initialize_head=True,
                      head_node_args={**_node(), "include_dashboard": False})
    try:
        cluster.add_node(**_node())
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        cluster.shutdown()  # type: ignore[no-untyped-call]


def test_load_from_two_ray_nodes(ray_cluster: str,
                                 scripted: Callable[..., ScriptedServerProcess],
                                 tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "20", "--itl-ms", "5")
    out = tmp_path / "ray.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchlib", "measure", "--base-url", server.url, "--model",
         "scripted", "--tokenizer", str(tiny_model), "--input-len", "16", "--output-len", "8",
         "--num-prompts", "24", "--max-concurrency", "4", "--ray-address", ray_cluster,
         "--result-json", str(out), "--disable-tqdm"],
        capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = MeasureResult.model_validate_json(out.read_text())
    assert (result.completed, result.failed) == (24, 0)
    info = result.workers
    assert info is not None and (info.count, info.backend, info.nodes, info.hosts) == (
        2, "ray", 2, 1)  # two raylets of one host
    assert "at least one per node" in info.chosen
    for w in info.workers:
        assert w.requests == 12 and w.max_concurrency == 2
        assert w.timing.clock == "kernel"
        # one machine: the nodes' clocks agree within the measurement's own uncertainty
        assert 0 < w.clock_offset_uncertainty_ms < 50
        assert abs(w.clock_offset_ms) <= w.clock_offset_uncertainty_ms + 1.0
    records = read_requests(requests_path(out))
    assert sorted(r.index for r in records) == list(range(24))
    # output tokens from the server's usage; per-chunk counts by the driver's tokenizer
    assert all(r.output_tokens_source == "usage" and r.chunk_tokens for r in records)
    assert abs(errors_vs_truth(requests_path(out), server.truth)["ttft"]) < 1.0
    assert "2 ray on 2 Ray node(s) on 1 host(s)" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_a_wrong_address_says_how_to_start_a_cluster(tmp_path: Path, tiny_model: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchlib", "measure", "--base-url", "http://127.0.0.1:9",
         "--model", "m", "--tokenizer", str(tiny_model), "--num-prompts", "2",
         "--ray-address", f"127.0.0.1:{free_port()}", "--disable-tqdm"],
        capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert "--ray-address" in proc.stderr and "nothing answers" in proc.stderr
    assert "ray start --head" in proc.stderr
    assert "Traceback" not in proc.stderr
