"""An engine process: own process group, log file, readiness wait, guaranteed teardown.

The engine runs in a new session (its own process group), so stopping it stops every worker it
forked; :meth:`EngineProcess.stop` sends SIGTERM to the group, then SIGKILL after a grace
period, and is called on success, failure, timeout and Ctrl-C alike (context manager).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from benchlib._exceptions import BenchlibError

__all__ = ["EngineError", "EngineProcess"]


class EngineError(BenchlibError):
    """The engine exited or did not become ready; carries the tail of its log."""


class EngineProcess:
    """Start ``argv`` with its output in ``log_path``; wait until ``ready_url`` answers 200."""

    def __init__(self, argv: Sequence[str], *, log_path: Path, ready_url: str,
                 env: Mapping[str, str] | None = None, ready_timeout: float = 600.0) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self.ready_url = ready_url
        self.env = dict(env or {})
        self.ready_timeout = ready_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        try:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         env={**os.environ, **self.env})
        finally:
            log.close()

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self) -> float:
        """Block until ready; return the seconds it took from start."""
        assert self.proc is not None, "start() first"
        begin = time.perf_counter()
        while True:
            code = self.proc.poll()
            if code is not None:
                raise EngineError(f"engine exited with code {code} before it was ready; "
                                  f"log {self.log_path}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.ready_url, timeout=2) as resp:
                    if resp.status == 200:
                        self.startup_s = time.perf_counter() - begin
                        return self.startup_s
            except (urllib.error.URLError, OSError):
                pass
            if time.perf_counter() - begin > self.ready_timeout:
                raise EngineError(f"engine not ready after {self.ready_timeout:g} s; "
                                  f"log {self.log_path}:\n{self.log_tail()}")
            time.sleep(0.5)

    def stop(self, grace: float = 15.0) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
        proc = self.proc
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                # the leader is gone; make sure no worker of the group survives it
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
            break

    def __enter__(self) -> EngineProcess:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
