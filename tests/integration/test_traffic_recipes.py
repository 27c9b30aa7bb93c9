"""Traces and conversations in a recipe (issue 27): scenarios with ``dataset: trace`` and
``dataset: conversations`` (the shipped files) run under ``benchlib run`` against a scripted
server, each measurement accounted for by the requests it plans (a trace's lines, a set's
turns), its result carrying the trace's schedule TTFT and the conversations' per-turn block."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib.pipeline import read_sidecar
from tests._runs import run_day

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benchlib" / "measure" / "data"


def test_trace_and_conversation_scenarios_in_a_recipe(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "5", "--itl-ms", "1", "--prefix-cache", "--model",
                      "scripted")
    recipe = tmp_path / "shapes.yaml"
    recipe.write_text(f"""\
name: shapes
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: endpoint, base_url: "{server.url}"}}
scenarios:
  - {{name: trace, dataset: trace, dataset_path: "{DATA / 'trace-synthetic.jsonl'}",
      trace_time_scale: 0.25, concurrencies: [64], num_prompts: 100, num_warmups: 0}}
  - {{name: chat, endpoint: chat, dataset: conversations,
      dataset_path: "{DATA / 'conversations-synthetic.jsonl'}", output_len: 8,
      conversation_think_s: 0.05, concurrencies: [2], num_prompts: 3, repeats: 2}}
  - {{name: paced, input_len: 16, output_len: 10, request_rate: 300, burstiness: inf,
      concurrencies: [1], num_prompts: 12, num_warmups: 0}}
""")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe), "--outputs",
                           str(out)], capture_output=True, text=True, cwd=REPO, timeout=600,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = run_day(out) / "shapes"
    results = read_sidecar(run / "03_measure.json").results
    trace = results["trace/c64"]
    assert trace["completed"] == 40  # the trace's 40 lines, though 100 were allowed
    assert trace["median_ttft_from_schedule_ms"] is not None
    chat = results["chat/c2"]
    assert chat["completed"] == 12  # 3 sessions × 4 turns
    assert [t["turn"] for t in chat["conversations"]["per_turn"]] == [0, 1, 2, 3]
    assert chat["conversations"]["prefix_cache_hit_rate"] > 0.5
    assert chat["intervals"]["source"] == "repeats" and len(chat["repeats"]) == 2
    first = json.loads((run / "measure" / "chat-c2.json").read_text())
    again = json.loads((run / "measure" / "chat-c2.r1.json").read_text())
    assert first["benchlib"]["seed"] != again["benchlib"]["seed"]
    # a set's sessions do not change with the seed: the second repeat ran the next ones
    # (after the first's three and its warmup), so neither repeat is a cache hit on the other
    assert first["benchlib"]["prompts_sha256"] != again["benchlib"]["prompts_sha256"]
    assert first["conversations"]["per_turn"][0]["prefix_cache_hit_rate"] < 0.2
    assert again["conversations"]["per_turn"][0]["prefix_cache_hit_rate"] < 0.2
    paced = results["paced/c1"]  # 300 req/s into one slot: requests wait
    assert paced["median_ttft_from_schedule_ms"] > paced["median_ttft_text_ms"] + 10
    # the report adds its sections: intervals, schedule TTFT, conversations
    page = (run / "report.html").read_text(encoding="utf-8")
    for section in ("id='intervals'", "id='schedule-ttft'", "id='conversations'",
                    "2 repeats", "requests (one run)"):
        assert section in page, section
    assert "id='significance'" not in page  # no variants: nothing to compare
