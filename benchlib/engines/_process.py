"""An engine process: own process group, log file, readiness wait, guaranteed teardown.

The engine runs in a new session (its own process group), so stopping it stops every worker it
forked; :meth:`EngineProcess.stop` sends SIGTERM to the group, then SIGKILL after a grace
period, and runs on success, failure, timeout and Ctrl-C alike (context manager). When the
engine dies or never becomes ready, :class:`EngineError` carries the log's tail and, for
failures the log parser recognises, what to do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from benchlib._exceptions import BenchlibError
from benchlib.engines._logparse import parse_engine_log
from benchlib.engines._ready import http_ok

__all__ = ["EngineError", "EngineProcess"]


class EngineError(BenchlibError):
    """The engine exited or did not become ready; carries the tail of its log and hints."""

    def __init__(self, message: str, log_tail: str = "", hints: Sequence[str] = ()) -> None:
        self.log_tail = log_tail
        self.hints = list(hints)
        text = message
        if hints:
            text += "\n" + "\n".join(f"hint: {h}" for h in hints)
        if log_tail:
            text += f"\n--- engine log (tail) ---\n{log_tail}"
        super().__init__(text)


class EngineProcess:
    """Start ``argv`` with its output in ``log_path``; ready when ``ready_url`` answers 200
    (the one-token check is 02_launch's, with the API key the recipe names)."""

    def __init__(self, argv: Sequence[str], *, log_path: Path, ready_url: str,
                 env: Mapping[str, str] | None = None, ready_timeout: float = 600.0,
                 api_key: str | None = None) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self.ready_url = ready_url
        self.env = dict(env or {})
        self.ready_timeout = ready_timeout
        self.api_key = api_key
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None
        self._t0 = 0.0

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._t0 = time.perf_counter()
        with self.log_path.open("ab") as log:
            try:
                self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True,
                                             env={**os.environ, **self.env})
            except OSError as exc:
                raise EngineError(f"cannot start {self.argv[0]}: {exc.strerror or exc}"
                                  ) from None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _error(self, message: str) -> EngineError:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        hints = [f"{f.name}: {f.hint}" for f in parse_engine_log(text).failures]
        return EngineError(f"{message} (log: {self.log_path})", self.log_tail(), hints)

    def wait_ready(self) -> float:
        """Block until ready; return the seconds since start (the engine's startup time)."""
        assert self.proc is not None, "start() first"
        while True:
            code = self.proc.poll()
            if code is not None:
                raise self._error(f"engine exited with code {code} before it was ready")
            if http_ok(self.ready_url, api_key=self.api_key):
                self.startup_s = time.perf_counter() - self._t0
                return self.startup_s
            if time.perf_counter() - self._t0 > self.ready_timeout:
                raise self._error(f"engine not ready after {self.ready_timeout:g} s")
            time.sleep(0.5)

    def stop(self, grace: float = 15.0) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
        proc = self.proc
        if proc is None:
            return
        try:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace)
        finally:  # also when a second Ctrl-C cuts the grace period short
            # workers that outlived the leader, or a leader that ignored SIGTERM
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)  # a process stuck in the driver may never be reaped

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
