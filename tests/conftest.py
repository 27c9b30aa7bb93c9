"""Shared fixtures: the tiny model (generated once per session) and the scripted server; the
marks that split make test into its parallel and serial passes; the run's closing list of
every skip with its reason."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from benchlib.models import make_tiny_model
from tests import _serial
from tests._tls_files import TlsFiles, make_tls_files

REPO = Path(__file__).resolve().parents[1]

# No example has a deadline: on two shared cores (make test's parallel pass) a descheduled
# example would fail as "too slow", which says nothing of the code. Mutation testing
# (tools/mutation.py) runs each mutant against the same examples: a mutant is then killed or
# not on every run alike, never by a lucky draw. Elsewhere Hypothesis draws anew.
settings.register_profile("benchlib", deadline=None)
settings.register_profile("mutation", parent=settings.get_profile("benchlib"), derandomize=True,
                          database=None)
mutation = os.environ.get("BENCHLIB_HYPOTHESIS_PROFILE") == "mutation"
settings.load_profile("mutation" if mutation else "benchlib")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model folder: ``$BENCHLIB_TINY_MODEL`` (made by ``make model``) or a new one."""
    given = os.environ.get("BENCHLIB_TINY_MODEL")
    if given and (Path(given) / "config.json").is_file():
        return Path(given)
    return make_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama", seed=0)


@pytest.fixture(scope="session")
def tokenizer(tiny_model: Path) -> Any:
    from benchlib.measure import load_tokenizer

    return load_tokenizer(tiny_model)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A fresh self-signed certificate for ``localhost`` / ``127.0.0.1`` and its key."""
    made = make_tls_files(tmp_path_factory.mktemp("tls"))
    if isinstance(made, str):
        pytest.skip(made)
    return made


class ScriptedServerProcess:
    """``benchlib scripted-server`` in a child process, so it shares the CPUs like an engine."""

    def __init__(self, truth: Path, args: list[str]) -> None:
        self.truth = truth
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchlib", "scripted-server", "--port", "0",
             "--truth", str(truth), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise RuntimeError(f"scripted server did not start: {line}{self.proc.stdout.read()}")
        self.url = line.split()[-1]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Callable[..., ScriptedServerProcess]]:
    """Factory: ``scripted("--ttft-ms", "30")`` starts a server and returns it."""
    started: list[ScriptedServerProcess] = []

    def start(*args: str) -> ScriptedServerProcess:
        server = ScriptedServerProcess(tmp_path / f"truth-{len(started)}.jsonl", list(args))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks, and before pytest-xdist's
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:  # turns groups into ids
    """make test's two passes (tests/_serial.py): the ``serial`` marks and the groups."""
    _serial.apply(items)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    """End every run with the skips it took, grouped by reason with their counts and tests:
    a skip is never silent (``make test`` passes ``-rs`` too, which lists them one by one)."""
    skipped = terminalreporter.stats.get("skipped", [])
    reasons: dict[str, list[str]] = {}
    for report in skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reasons.setdefault(reason.removeprefix("Skipped: "), []).append(report.nodeid)
    terminalreporter.write_sep("=", f"skips taken: {len(skipped)}")
    for reason, nodes in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        terminalreporter.write_line(f"{len(nodes):>4} × {reason}")
        for node in nodes:
            terminalreporter.write_line(f"       {node}")
