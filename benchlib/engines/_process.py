"""An engine process: own process group, log file, readiness wait, guaranteed teardown.

The engine runs in a new session (its own process group), so stopping it stops every worker it
forked; :meth:`EngineProcess.stop` sends SIGTERM to the group, then SIGKILL after a grace
period, and runs on success, failure, timeout and Ctrl-C alike (context manager). When the
engine dies or never becomes ready, :class:`EngineError` carries the log's tail and, for
failures the log parser recognises, what to do.

Given ``secrets``, the engine's output does not go to the log file directly: a thread reads
it from a pipe and writes it through a :class:`~benchlib._secrets.SecretFilter`, so a value
the engine prints (vLLM logs its arguments, ``--api-key`` included) never reaches the disk,
even when the runner is killed before it could scrub anything. (An engine that outlives a
killed runner then meets a closed pipe the next time it writes, and stops.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from benchlib._exceptions import EngineError
from benchlib._secrets import SecretFilter
from benchlib.engines._logparse import parse_engine_log
from benchlib.engines._ready import http_ok

__all__ = ["EngineError", "EngineProcess"]



def _signal_name(code: int) -> str:
    """`` (SIGSEGV)`` for an exit code that is a signal, else nothing."""
    try:
        return f" ({signal.Signals(-code).name})" if code < 0 else ""
    except ValueError:
        return ""


def _crash_hints(argv: Sequence[str], code: int) -> list[str]:
    """What an engine's crash before readiness is known to mean, for the command that
    crashed (a crash leaves no line in the log for :func:`parse_engine_log` to read)."""
    hints = []
    name = Path(argv[0]).name if argv else ""
    if (code == -signal.SIGSEGV and name.startswith("llama-server")
            and ("--spec-draft-model" in argv or "-md" in argv)
            and not {"-nr", "--no-repack"} & set(argv)):
        hints.append("llama.cpp (b11312) with a draft model dies of SIGSEGV at start on a CPU "
                     "with AMX when it repacks the weights for the CPU's extra buffer types: "
                     "add -nr (--no-repack) to engine.args")
    return hints


def _pump(source: int, log_path: Path, secrets: SecretFilter) -> None:
    """Copy the engine's output from the pipe ``source`` to ``log_path`` through ``secrets``
    until every writer has closed the pipe."""
    with log_path.open("ab", buffering=0) as log:
        try:
            while chunk := os.read(source, 65536):
                log.write(secrets.feed(chunk))
        finally:
            log.write(secrets.flush())
            os.close(source)


class EngineProcess:
    """Start ``argv`` with its output in ``log_path``; ready when ``ready_url`` answers 200
    (the one-token check is 02_launch's, with the API key the recipe names). ``secrets``:
    values replaced by ``***`` before the output reaches the log."""

    def __init__(self, argv: Sequence[str], *, log_path: Path, ready_url: str,
                 env: Mapping[str, str] | None = None, ready_timeout: float = 600.0,
                 api_key: str | None = None, secrets: Sequence[str] = ()) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self.ready_url = ready_url
        self.env = dict(env or {})
        self.ready_timeout = ready_timeout
        self.api_key = api_key
        self.secrets = list(secrets)
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None
        #: after :meth:`stop`: whether every process of the group had exited
        self.group_gone: bool | None = None
        self._t0 = 0.0
        self._log_thread: threading.Thread | None = None

    @property
    def pgid(self) -> int | None:
        """The engine's process group (its leader's pid: it runs in a session of its own)."""
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._t0 = time.perf_counter()
        log_filter = SecretFilter(self.secrets)
        read_end, write_end = os.pipe()
        try:
            self.proc = subprocess.Popen(self.argv, stdout=write_end, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         env={**os.environ, **self.env})
        except OSError as exc:
            os.close(read_end)
            raise EngineError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from None
        finally:
            os.close(write_end)  # the engine holds it now; EOF comes when its group is gone
        self._log_thread = threading.Thread(target=_pump, name="engine-log", daemon=True,
                                            args=(read_end, self.log_path, log_filter))
        self._log_thread.start()

    def wait_log(self, timeout: float = 5.0) -> None:
        """Wait until the engine's output so far is in the log (after it exited)."""
        if self._log_thread is not None:
            self._log_thread.join(timeout)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _error(self, message: str, more_hints: Sequence[str] = ()) -> EngineError:
        if self.proc is not None and self.proc.poll() is not None:
            self.wait_log(timeout=2.0)
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        hints = [f"{f.name}: {f.hint}" for f in parse_engine_log(text).failures]
        hints += more_hints
        return EngineError(f"{message} (log: {self.log_path})", self.log_tail(), hints)

    def wait_ready(self) -> float:
        """Block until ready; return the seconds since start (the engine's startup time)."""
        assert self.proc is not None, "start() first"
        while True:
            code = self.proc.poll()
            if code is not None:
                raise self._error(f"engine exited with code {code}{_signal_name(code)} "
                                  "before it was ready", _crash_hints(self.argv, code))
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
            # a worker that left the group may still hold the pipe: do not wait for it long
            self.wait_log(timeout=5.0)
            self.group_gone = self._wait_group_gone(proc.pid, timeout=10.0)

    @staticmethod
    def _wait_group_gone(pgid: int, timeout: float) -> bool:
        """Whether no process of group ``pgid`` is left (polled up to ``timeout`` s): the
        next engine of a comparison starts only once the previous one's memory is free."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:  # a member changed owner: it is still there
                pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

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
