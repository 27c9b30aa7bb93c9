"""``benchlib launch``: every secret of the recipe (``${NAME}`` in ``engine.args`` as well as
the API key) stays out of the console and the engine's log, also when the engine fails and
its log's tail is printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOKEN, OTHER, KEY = "hf-planted-token-0b7e", "planted-other-value-41", "sk-planted-launch-9d"


def test_launch_prints_and_logs_no_secret_value(tmp_path: Path, tiny_model: Path) -> None:
    exe = tmp_path / "dies"
    exe.write_text('#!/bin/sh\necho "engine args: $@"\n'
                   "printf 'not utf-8 \\377 then %s\\n' \"$LAUNCH_KEY\"\nexit 3\n")
    exe.chmod(0o755)
    path = tmp_path / "t.yaml"
    path.write_text(f"""\
name: t
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: llamacpp, executable: "{exe}", api_key_env: LAUNCH_KEY, ready_timeout_s: 30,
          args: ["--hf-token", "${{HUB_TOKEN}}", "--extra", "x-${{SOME_VALUE}}",
                 "--api-key", "${{LAUNCH_KEY}}"]}}
scenarios: [{{name: s}}]
""")
    log = tmp_path / "engine.log"
    proc = subprocess.run(
        [sys.executable, "-m", "benchlib", "launch", str(path), "--log", str(log)],
        capture_output=True, cwd=REPO, timeout=120,
        env={**os.environ, "HUB_TOKEN": TOKEN, "SOME_VALUE": OTHER, "LAUNCH_KEY": KEY})
    console = proc.stdout + proc.stderr
    assert proc.returncode == 1, console.decode(errors="replace")
    # the command and the failing engine's log tail are shown, with every value hidden
    assert b"--hf-token *** --extra" in proc.stdout
    assert b"exited with code 3" in proc.stderr and b"engine args:" in proc.stderr
    data = log.read_bytes()
    assert b"\xff then ***" in data
    for value in (TOKEN, OTHER, KEY):
        assert value.encode() not in console, value
        assert value.encode() not in data, value
