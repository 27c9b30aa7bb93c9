"""The open-file limit rules, against a stand-in for ``resource``: raised as far as a run
needs and the hard limit allows, never lowered, the hard limit never touched, a refusal
reported as the limit left in force; ``None`` where there is no limit or no ``resource``."""

from __future__ import annotations

import pytest

from benchlib.measure.wire import _limits
from benchlib.measure.wire._limits import HEADROOM, open_file_limit, raise_open_file_limit

INF = -1  # RLIM_INFINITY's stand-in: a value no real limit takes
NOFILE = 7


class FakeResource:
    """``getrlimit``/``setrlimit`` of RLIMIT_NOFILE only; records every ``setrlimit``."""

    RLIMIT_NOFILE = NOFILE
    RLIM_INFINITY = INF

    def __init__(self, soft: int, hard: int, refuse: bool = False) -> None:
        self.soft, self.hard, self.refuse = soft, hard, refuse
        self.calls: list[tuple[int, int]] = []

    def getrlimit(self, which: int) -> tuple[int, int]:
        assert which == NOFILE
        return self.soft, self.hard

    def setrlimit(self, which: int, limits: tuple[int, int]) -> None:
        assert which == NOFILE
        self.calls.append(limits)
        if self.refuse:
            raise ValueError("not allowed")
        self.soft = limits[0]


@pytest.mark.parametrize(("soft", "hard", "sockets", "result", "calls"), [
    (1024, INF, 1000, 1000 + HEADROOM, [(1000 + HEADROOM, INF)]),   # raised to what it needs
    (1024, 1040, 1000, 1040, [(1040, 1040)]),                     # … up to the hard limit
    (1024, 1024, 1000, 1024, []),                                 # hard = soft: nothing to do
    (2000, INF, 1000, 2000, []),                                  # enough already: not lowered
    (1000 + HEADROOM, INF, 1000, 1000 + HEADROOM, []),            # exactly enough
    (INF, INF, 10**6, None, []),                                  # unlimited
])
def test_raise_open_file_limit(monkeypatch: pytest.MonkeyPatch, soft: int, hard: int,
                               sockets: int, result: int | None,
                               calls: list[tuple[int, int]]) -> None:
    fake = FakeResource(soft, hard)
    monkeypatch.setattr(_limits, "resource", fake)
    assert raise_open_file_limit(sockets) == result
    assert fake.calls == calls


def test_a_refused_raise_reports_the_limit_in_force(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResource(1024, INF, refuse=True)
    monkeypatch.setattr(_limits, "resource", fake)
    assert raise_open_file_limit(5000) == 1024
    assert fake.calls == [(5000 + HEADROOM, INF)]


@pytest.mark.parametrize(("soft", "result"), [(1024, 1024), (INF, None)])
def test_open_file_limit(monkeypatch: pytest.MonkeyPatch, soft: int, result: int | None) -> None:
    monkeypatch.setattr(_limits, "resource", FakeResource(soft, INF))
    assert open_file_limit() == result


def test_no_resource_module_means_no_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "resource", None)
    assert open_file_limit() is None
    assert raise_open_file_limit(10**6) is None
