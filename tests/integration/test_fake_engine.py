"""Adding an engine is one module plus its registration (issue 38): a copy of benchlib gets a
new engine kind, ``fake`` — its adapter module beside the others (it starts the kit's
scripted server, a real server, under its own kind) and its name in the registry, nothing
else — and a recipe of that kind runs through plan, launch, measure and compare."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests._runs import run_day

REPO = Path(__file__).resolve().parents[2]

ADAPTER = '''"""fake: an engine kind added by a test, one module and its registration."""

from __future__ import annotations

import sys

from benchlib.adapters._base import EngineAdapter, LaunchInputs

__all__ = ["FAKE"]


class _Fake(EngineAdapter):
    def command(self, launch: LaunchInputs) -> tuple[list[str], str]:
        return [sys.executable, "-m", "benchlib", "scripted-server", "--host", launch.host,
                "--port", str(launch.port), "--model", launch.served_name,
                "--ttft-ms", "2", "--itl-ms", "1"], launch.ready_path


FAKE = _Fake(name="fake", label="a fake engine", no_flag_set="a test's engine")
'''


def _register(root: Path) -> None:
    (root / "benchlib" / "adapters" / "_fake.py").write_text(ADAPTER, encoding="utf-8")
    registry = root / "benchlib" / "adapters" / "_registry.py"
    text = registry.read_text(encoding="utf-8")
    for old, new in (
            ("from benchlib.adapters._endpoint import ENDPOINT\n",
             "from benchlib.adapters._endpoint import ENDPOINT\n"
             "from benchlib.adapters._fake import FAKE\n"),
            ('"endpoint", "scripted"]', '"endpoint", "scripted", "fake"]'),
            ("ENDPOINT, SCRIPTED)", "ENDPOINT, SCRIPTED, FAKE)")):
        assert old in text, old  # the registration is where the registry says it is
        text = text.replace(old, new)
    registry.write_text(text, encoding="utf-8")


def test_a_new_engine_kind_runs_every_step(tmp_path: Path, tiny_model: Path) -> None:
    root = tmp_path / "kit"
    shutil.copytree(REPO / "benchlib", root / "benchlib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    _register(root)
    recipe = tmp_path / "f.yaml"
    recipe.write_text(f"""\
name: f
model: {{id: fake-model, local_path: "{tiny_model}"}}
engine: {{kind: fake, ready_timeout_s: 60}}
hardware: {{gpu_count: 0}}
plan: {{gpu_memory_gib: 16, kv_budget_gib: 1.0}}
scenarios:
  - {{name: chat, endpoint: chat, input_len: 16, output_len: 8, concurrencies: [1, 2],
      num_prompts: [2, 4]}}
""", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe), "--outputs",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=root,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = run_day(tmp_path / "out") / "f"
    state = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert state["finished"] is True
    assert set(state["statuses"]) == {"00_plan", "01_download", "02_launch", "03_measure",
                                      "04_compare"}
    launch = json.loads((run / "02_launch.json").read_text(encoding="utf-8"))
    assert launch["results"]["kind"] == "fake"
    measure = json.loads((run / "03_measure.json").read_text(encoding="utf-8"))
    assert set(measure["results"]) >= {"chat/c1", "chat/c2"}
