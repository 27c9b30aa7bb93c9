"""The H200 example (tests/data/h200_run: llama.cpp BF16 against Q4_K_M on an H200, c=1..16)
re-rendered from its run folder: the report fits 1,280 px in Chromium, names no absolute
path, carries one provenance card, and its c=16 rows have no client_bound caveat (every TTFT
an exact stamp: the lag can move no figure by 1 %)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from benchlib.report import FIGURES, render_report
from benchlib.runs._paths import kit_root
from tests._browser import machine_paths, open_report

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "h200_run" / "h200-llamacpp"


def test_the_h200_example_re_renders_for_a_laptop(tmp_path: Path) -> None:
    run = tmp_path / "2026-12-03" / "h200-llamacpp"
    shutil.copytree(EXAMPLE, run)
    page = render_report(run, strict=False).html
    text = re.sub(r"data:[^']+", "", page.read_text())
    for root in (str(kit_root()), str(tmp_path)):
        assert not re.search(rf"(?<![\w./]){re.escape(root)}", text), root
    # the GPU host's own paths, recorded in the launch command there, are not shown either
    assert machine_paths(text) == []
    # ... but its last parts are; unless the GPU host's tree stood where this kit stands (the
    # device tool copies the checkout to the same path): then it is this kit's path, relative
    recorded = "/work/main/.device/work/llamacpp/bin/llama-server"
    assert recorded in (run / "bf16" / "02_launch.json").read_text()
    here = recorded.startswith(str(kit_root()) + "/")
    assert (os.path.relpath(recorded, run.resolve()) if here
            else "…/llamacpp/bin/llama-server") in text
    assert text.count("id='provenance'") == 1 and text.count("class='card'") == 1
    assert "client_bound" not in text.split("id='caveats'")[1].split("id='names'")[0]
    for variant in ("bf16", "q4_k_m"):
        result = json.loads((run / variant / "measure" / "chat-c16.json").read_text())
        assert result["timing"]["client_bound"] is False
    seen = open_report(page, tmp_path / "report.png", FIGURES)
    assert seen.errors == []
    assert seen.scroll_width <= seen.viewport_width == 1280, seen.overflowing
