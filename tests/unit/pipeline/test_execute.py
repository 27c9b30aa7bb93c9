"""A notebook run by the runner: a secret a cell prints, shows or raises reaches neither the
console echo nor the saved notebook nor the error, and the notebook names no absolute path
of the run folder."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from benchlib.pipeline._execute import run_notebook

SECRET = "sk-planted-cell-secret-77"


def notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("where = ''")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        nbformat.v4.new_code_cell(
            "import os, sys\nkey = os.environ['T_SECRET']\nprint('key', key)\n"
            "print('split', key[:5], end='', flush=True)\nprint(key[5:])\n"
            "print('err', key, file=sys.stderr)\nopen('here.txt', 'w').write(where)"),
        nbformat.v4.new_code_cell("{'shown': key}"),
        nbformat.v4.new_code_cell("raise ValueError('bad key ' + key)"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    return path


def test_cells_never_echo_or_save_a_secret(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import papermill as pm

    monkeypatch.setenv("T_SECRET", SECRET)
    root = tmp_path / "kit"
    (root / "notebooks").mkdir(parents=True)
    source = notebook(root / "notebooks" / "n.ipynb")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    out = run_dir / "n.ipynb"
    with pytest.raises(pm.PapermillExecutionError) as info:
        run_notebook(source, out, {"where": "param"}, root=root, secrets=[SECRET], timeout=60)
    assert SECRET not in str(info.value) and "bad key ***" in str(info.value)
    console = capfd.readouterr()
    assert "key ***" in console.out and "split ***" in console.out
    assert "err ***" in console.err
    assert SECRET not in console.out + console.err
    saved = out.read_text()
    assert SECRET not in saved and "shown" in saved and "***" in saved
    meta = json.loads(saved)["metadata"]["papermill"]
    assert meta["input_path"] == "notebooks/n.ipynb" and meta["output_path"] == "n.ipynb"
    assert str(run_dir) not in saved
    assert (run_dir / "here.txt").read_text() == "param"  # the kernel works in the run folder
