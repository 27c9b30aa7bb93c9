"""A comparison shaped like the demo's (four variants, two of them speculating, three
scenarios at two concurrencies) run end to end by ``benchlib run`` on scripted servers
(``endpoint`` engines): its report opens, in Chromium at 1,280 px, with the headline table
and the figure inside the first 900 px, the speedups beside their intervals and every
other section folded; writeup.md opens the same way; 04_compare's notebook shows the same
table first. The scripted server's chunks of several tokens stand in for accepted drafts:
its timings are canned, so the figures test the kit, not an engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib.report import FIGURES, report_context
from benchlib.runs._glance import MAX_LINES, Glance
from tests._browser import check_first_screen, open_report
from tests._runs import run_day

REPO = Path(__file__).resolve().parents[2]


def _recipe(tmp_path: Path, tiny_model: Path, urls: dict[str, str]) -> Path:
    spec = "speculative: {method: ngram, k: 4}"
    path = tmp_path / "glance.yaml"
    path.write_text(f"""\
name: glance
description: four endpoint variants on scripted servers, two drafting
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: endpoint, base_url: "{urls['a-off']}"}}
variants:
  - {{name: a-off}}
  - {{name: a-spec, engine: {{kind: endpoint, base_url: "{urls['a-spec']}", {spec}}}}}
  - {{name: b-off, engine: {{kind: endpoint, base_url: "{urls['b-off']}"}}}}
  - {{name: b-spec, engine: {{kind: endpoint, base_url: "{urls['b-spec']}", {spec}}}}}
scenarios:
  - {{name: chat, endpoint: chat, input_len: 16, output_len: 12, concurrencies: [1, 4],
      num_prompts: [4, 8]}}
  - {{name: summarization, endpoint: chat, input_len: 64, output_len: 12,
      concurrencies: [1, 4], num_prompts: [4, 8]}}
  - {{name: random, endpoint: completions, input_len: 16, output_len: 12,
      concurrencies: [1, 4], num_prompts: [4, 8]}}
compare: {{differences: [speculative]}}
""")
    return path


def test_a_demo_shaped_comparison_answers_on_its_first_screen(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    servers = {name: scripted("--ttft-ms", "3", "--itl-ms", itl, "--tokens-per-chunk", chunk,
                              "--model", "scripted")
               for name, itl, chunk in (("a-off", "4", "1"), ("a-spec", "4", "3"),
                                        ("b-off", "2", "1"), ("b-spec", "2", "2"))}
    path = _recipe(tmp_path, tiny_model, {n: s.url for n, s in servers.items()})
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(path), "--outputs",
                           str(out)], capture_output=True, text=True, cwd=REPO, timeout=600,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = run_day(out) / "glance"
    g = Glance.model_validate(report_context(run)["glance"])
    assert [v.name for v in g.variants] == ["a-off", "a-spec", "b-off", "b-spec"]
    assert [s.name for s in g.scenarios] == ["chat", "summarization", "random"]
    spec = {v.name: v for v in g.variants}
    # each over the first variant of its engine kind and model without speculation: all four
    # are endpoints (the demo's are two engines, each with its own "off")
    assert spec["a-spec"].speedup_over == spec["b-spec"].speedup_over == "a-off"
    for name in ("a-spec", "b-spec"):
        for cell in spec[name].cells.values():
            assert cell.speedup is not None and cell.speedup > 1.2, (name, cell)
            assert cell.speedup_low is not None and cell.significant is not None
    assert 1 <= len(g.lines) <= MAX_LINES
    assert any(line.startswith("Speculation on a-spec") for line in g.lines), g.lines
    seen = open_report(run / "report.html", tmp_path / "report.png", FIGURES)
    check_first_screen(seen)
    writeup = (run / "writeup.md").read_text()
    assert writeup.index("## At a glance") < writeup.index(g.table) \
        < writeup.index("](variants.png)") < writeup.index(g.lines[0]) \
        < writeup.index("## Per scenario")
    notebook = json.loads((run / "04_compare.ipynb").read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"
            and "bp.compare(" in "".join(c["source"])]
    shown = json.dumps(code[0]["outputs"])
    assert "chat: speedup (c1)" in shown and "a-spec" in shown
