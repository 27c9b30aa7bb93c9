"""Every notebook stands on its own, run with plain papermill as users run it: with a YAML
recipe and the parameters ``benchlib run`` passes (against the scripted server), with no
parameters at all from another folder (the demo recipe, as JupyterLab runs it), and with no
engine URL (a scripted server stands in for the engine the runner would start). The same
notebooks run by ``benchlib run``: tests/integration/test_pipeline.py."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchlib.pipeline import RunFolder, step_table

REPO = Path(__file__).resolve().parents[2]
STEPS = step_table()


def papermill(step: str, out: Path, *params: str, cwd: Path = REPO
              ) -> subprocess.CompletedProcess[str]:
    """``papermill notebooks/NN_step.ipynb OUT -p name value …``, as a user types it."""
    args = [a for pair in zip(params[::2], params[1::2], strict=True)
            for a in ("-p", *pair)]
    return subprocess.run([sys.executable, "-m", "papermill", "--no-progress-bar",
                           str(REPO / "notebooks" / f"{step}.ipynb"), str(out), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=180)


def recipe(tmp_path: Path, tiny_model: Path, engine: str) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(f"""\
name: t
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {engine}
scenarios:
  - {{name: chat, endpoint: chat, input_len: 16, output_len: 4, concurrencies: [1, 2],
      num_prompts: 4}}
""")
    return path


def outputs(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    return json.dumps([c.get("outputs", []) for c in cells])


def test_each_notebook_with_a_yaml_recipe_and_the_runners_parameters(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "2", "--itl-ms", "1", "--model", "scripted")
    path = str(recipe(tmp_path, tiny_model, "{kind: vllm, python: /bin/python}"))
    run = RunFolder(path=tmp_path / "run")
    given = {"00_plan": (), "01_download": (),
             "02_launch": ("base_url", server.url),
             "03_measure": ("base_url", server.url, "model_path", str(tiny_model)),
             "04_compare": ()}
    for step, extra in given.items():
        proc = papermill(step, tmp_path / f"{step}.ipynb", "recipe_path", path,
                         "run_dir", str(run.path), *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = STEPS[step].read_result(run)  # saved, and of the declared type
        assert result is not None, step
    download = STEPS["01_download"].read_result(run)
    assert download is not None and download.model_dump()["files_hash"]["files"] == 5
    measured = STEPS["03_measure"].read_result(run)
    assert measured is not None and measured.model_dump()["chat/c2"]["completed"] == 4
    assert run.summary_png.stat().st_size > 10_000
    compared = STEPS["04_compare"].read_result(run)
    assert compared is not None and compared.model_dump()["runs"] == [str(run.path)]
    assert "chat" in outputs(tmp_path / "04_compare.ipynb")


def test_a_notebook_with_its_defaults_from_another_folder(tmp_path: Path) -> None:
    """As JupyterLab runs it: the kernel in notebooks/, no parameter given."""
    proc = papermill("00_plan", tmp_path / "plan.ipynb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "summarization" in outputs(tmp_path / "plan.ipynb")  # the demo's scenarios
    assert list(tmp_path.iterdir()) == [tmp_path / "plan.ipynb"]  # nothing else written


def test_without_an_engine_url_a_scripted_server_stands_in(tmp_path: Path,
                                                            tiny_model: Path) -> None:
    path = str(recipe(tmp_path, tiny_model, "{kind: vllm, python: /bin/python}"))
    run = RunFolder(path=tmp_path / "run")
    proc = papermill("02_launch", tmp_path / "launch.ipynb", "recipe_path", path,
                     "run_dir", str(run.path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "a scripted server at" in outputs(tmp_path / "launch.ipynb")
    launch = STEPS["02_launch"].read_result(run)
    assert launch is not None
    url = launch.model_dump()["base_url"]
    with pytest.raises(urllib.error.URLError):  # stopped with the step
        urllib.request.urlopen(url + "/v1/models", timeout=2)
