"""The engine's log is filtered as it is written: a secret the engine prints never reaches
the file, even split across writes, in output that is not UTF-8, and while the engine still
runs (nothing waits for a scrub at the end)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from benchlib.engines import EngineError, EngineProcess

SECRET = "sk-engine-secret-5e21"

# prints the key whole, then split across two flushed writes, around a byte that is not UTF-8
_CHATTY = f"""
import sys, time
out = sys.stdout.buffer
key = {SECRET!r}.encode()
out.write(b"args: --api-key " + key + b" \\xff\\xfe\\n"); out.flush()
time.sleep(0.2)
out.write(b"again " + key[:7]); out.flush()
time.sleep(0.2)
out.write(key[7:] + b" done\\n"); out.flush()
sys.stderr.write("stderr " + {SECRET!r} + "\\n"); sys.stderr.flush()
"""


def test_log_is_filtered_as_written(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    engine = EngineProcess([sys.executable, "-c", _CHATTY + "time.sleep(60)\n"], log_path=log,
                           ready_url="http://127.0.0.1:9/never", secrets=[SECRET])
    engine.start()
    try:
        deadline = time.monotonic() + 20
        while b"stderr" not in (log.read_bytes() if log.exists() else b""):
            assert time.monotonic() < deadline, "the engine's output never reached the log"
            time.sleep(0.05)
        # the engine is still running: the file on disk is already clean
        assert engine.proc is not None and engine.proc.poll() is None
        data = log.read_bytes()
        assert SECRET.encode() not in data
        assert b"args: --api-key *** \xff\xfe\n" in data and b"again *** done\n" in data
        assert b"stderr ***\n" in data
    finally:
        engine.stop(grace=2)


def test_exit_error_carries_a_clean_tail(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    engine = EngineProcess([sys.executable, "-c", _CHATTY + "sys.exit(3)\n"], log_path=log,
                           ready_url="http://127.0.0.1:9/never", secrets=[SECRET])
    engine.start()
    try:
        with pytest.raises(EngineError) as info:
            engine.wait_ready()
    finally:
        engine.stop(grace=2)
    assert "exited with code 3" in str(info.value) and SECRET not in str(info.value)
    assert "again *** done" in info.value.log_tail
    assert SECRET.encode() not in log.read_bytes()


def test_a_crash_before_readiness_names_the_signal(tmp_path: Path) -> None:
    engine = EngineProcess([sys.executable, "-c", "import os, signal; print('loading'); "
                            "os.kill(os.getpid(), signal.SIGSEGV)"],
                           log_path=tmp_path / "engine.log", ready_url="http://127.0.0.1:9/x")
    engine.start()
    try:
        with pytest.raises(EngineError, match=r"exited with code -11 \(SIGSEGV\) before it was "
                                              "ready") as caught:
            engine.wait_ready()
    finally:
        engine.stop()
    assert caught.value.hints == []  # not a llama-server: nothing known to say


@pytest.mark.parametrize(("argv", "hinted"), [
    (["/x/llama-server", "-m", "t.gguf", "--spec-draft-model", "d.gguf"], True),
    (["/x/llama-server", "-m", "t.gguf", "-md", "d.gguf", "-nr"], False),  # already off
    (["/x/llama-server", "-m", "t.gguf"], False),  # no draft
])
def test_llama_cpp_with_a_draft_crashing_at_start_is_told_about_repacking(
        argv: list[str], hinted: bool) -> None:
    from benchlib.engines._process import _crash_hints

    hints = _crash_hints(argv, -11)
    assert bool(hints) is hinted and all("-nr (--no-repack)" in h for h in hints)
    assert _crash_hints(argv, 1) == []  # an exit, not a crash
