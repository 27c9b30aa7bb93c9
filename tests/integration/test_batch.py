"""``benchlib run A.yaml B.yaml …``: recipes in turn, past a failed one (on purpose: its
engine is an endpoint nobody listens on) and an invalid one, each run folder kept, an index
(JSON and HTML) of them with statuses and headline figures, paths relative to the index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib.engines import free_port
from benchlib.pipeline import read_sidecar
from benchlib.pipeline._batch import BatchIndex, expand_recipes
from tests._runs import run_day

REPO = Path(__file__).resolve().parents[2]


def recipe(folder: Path, name: str, base_url: str, tiny_model: Path) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(f"""\
name: {name}
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: endpoint, base_url: "{base_url}"}}
steps: [00_plan, 02_launch, 03_measure]
scenarios:
  - {{name: chat, endpoint: chat, input_len: 16, output_len: 8, concurrencies: [1, 2],
      num_prompts: 2}}
""")
    return path


def test_a_batch_runs_past_failures_and_indexes_every_run(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "5", "--itl-ms", "2", "--model", "scripted")
    folder = tmp_path / "recipes"
    folder.mkdir()
    recipe(folder, "a-ok", server.url, tiny_model)
    recipe(folder, "b-down", f"http://127.0.0.1:{free_port()}", tiny_model)
    (folder / "c-bad.yaml").write_text("name: c\nscenarios: 3\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(folder), "--outputs",
                           str(out)], capture_output=True, text=True, cwd=REPO, timeout=600,
                          env=dict(os.environ))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "2 of 3 recipes not ok" in proc.stderr
    day = run_day(out)
    [batch] = sorted(day.glob("batch-*"))
    index = BatchIndex.model_validate_json((batch / "index.json").read_text())
    assert index.finished and [e.status for e in index.entries] == ["ok", "failed", "invalid"]
    ok, down, bad = index.entries
    # both runs kept, named relative to the index
    assert ok.run_dir == "../a-ok" and down.run_dir == "../b-down"
    assert read_sidecar(batch / ok.run_dir / "03_measure.json").status == "ok"
    assert read_sidecar(batch / down.run_dir / "02_launch.json").status == "failed"
    assert down.steps["02_launch"] == "failed" and "02_launch" in (down.error or "")
    assert "scenarios" in (bad.error or "") and bad.run_dir is None
    assert [(h.scenario, h.concurrency) for h in ok.headline] == [("chat", 1),
                                                                        ("chat", 2)]
    assert all(h.median_ttft_ms and h.per_user_tok_s for h in ok.headline)
    assert (batch / ok.run_dir / "report.html").is_file()
    page = (batch / "index.html").read_text()
    assert "href='../a-ok/'" in page and "class='failed'" in page and "invalid" in page
    assert str(tmp_path) not in json.dumps(index.model_dump()).replace(str(folder), "")


def test_expand_recipes_reads_folders_in_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yml", "notes.txt"):
        (tmp_path / name).write_text("")
    assert [p.name for p in expand_recipes([tmp_path, tmp_path / "b.yaml"])] == [
        "a.yml", "b.yaml", "b.yaml"]
