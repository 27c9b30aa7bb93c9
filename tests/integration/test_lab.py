"""``make lab`` starts where users run it: headless (no browser; the URL with its token
printed), as root too (--allow-root), serving the notebooks, and the server offers the
kit's kernel ("benchlib"). The test starts the same command line on the bare Jupyter
server (JupyterLab runs on it; the dev extra installs it) on loopback, a free port, with a
token of its own, and asks its REST API."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from benchlib.engines import free_port
from benchlib.pipeline.lab import lab_command

REPO = Path(__file__).resolve().parents[2]


def get(url: str, token: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def test_lab_command_is_headless_and_allows_root() -> None:
    assert "--allow-root" in lab_command(euid=0) and "--allow-root" not in lab_command(euid=1000)
    command = lab_command(["--port", "9"], euid=1000)
    assert command[1:4] == ["-m", "jupyterlab", "--no-browser"]
    assert f"--ServerApp.root_dir={REPO / 'notebooks'}" in command and command[-2:] == [
        "--port", "9"]
    assert "$(VENV)/bin/python -m benchlib.pipeline.lab $(LAB_ARGS)" in (
        REPO / "Makefile").read_text()


def test_the_server_offers_the_kits_kernel(tmp_path: Path) -> None:
    pytest.importorskip("jupyter_server", reason="the dev extra installs jupyter_server")
    token, port = secrets.token_hex(16), free_port()
    command = lab_command([f"--IdentityProvider.token={token}", "--ServerApp.ip=127.0.0.1",
                           f"--ServerApp.port={port}", "--ServerApp.port_retries=0"],
                          app="jupyter_server")
    log = tmp_path / "server.log"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    with log.open("w") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                  cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, log.read_text()[-3000:]
            try:
                get(f"{base}/api/status", token)
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.3)
        specs = get(f"{base}/api/kernelspecs", token)["kernelspecs"]
        assert "benchlib" in specs, sorted(specs)
        assert specs["benchlib"]["spec"]["display_name"] == "Python (benchlib)"
        contents = get(f"{base}/api/contents", token)["content"]
        assert "00_plan.ipynb" in {c["name"] for c in contents}  # it serves notebooks/
        # the URL to open, printed (a token given on the command line is shown masked)
        assert re.search(rf"{base}/\S*\?token=", log.read_text()), log.read_text()
    finally:
        server.terminate()
        server.wait(timeout=20)
