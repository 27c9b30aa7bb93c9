"""The driver's side of the worker protocol: ready, one start, outcomes, done, faults."""

from __future__ import annotations

import pytest

from benchlib._exceptions import MeasureError
from benchlib.measure import RequestOutcome
from benchlib.measure.load._workers import Message, drive, shift


class _Scripted:
    """Workers whose messages are given up front, one poll's worth at a time."""

    def __init__(self, polls: list[list[tuple[int, Message]]], offsets: list[int]) -> None:
        self._polls = polls
        self.hosts = [f"h{k}" for k in range(len(offsets))]
        self.mono_offsets = offsets
        self.wall_offsets = [0] * len(offsets)
        self.uncertainties = [1_000] * len(offsets)
        self.started: dict[int, int] = {}
        self.stopped: bool | None = None

    def poll(self, timeout: float) -> list[tuple[int, Message]]:
        return self._polls.pop(0) if self._polls else []

    def go(self, worker: int, start_ns: int) -> None:
        self.started[worker] = start_ns

    def stop(self, fault: bool) -> None:
        self.stopped = fault


def _outcome(index: int, start_ns: int) -> RequestOutcome:
    o = RequestOutcome(index=index, prompt_len=1, start_ns=start_ns, end_ns=start_ns + 50,
                       release_ns=start_ns - 5)
    o.chunk_times_ns = [start_ns + 10, start_ns + 20]
    return o


def test_every_worker_starts_at_one_instant_on_its_own_clock() -> None:
    workers = _Scripted([[(0, ("ready",))], [(1, ("ready",))],
                         [(1, ("outcome", _outcome(1, 1_000), [1.0, 2.0])),
                          (0, ("outcome", _outcome(0, 2_000), None))],
                         [(0, ("done", 700)), (1, ("done", 900))]], offsets=[0, 5_000])
    got: list[tuple[int, int, int, list[float]]] = []
    warmed: list[bool] = []
    duration = drive(workers, 2, lambda k, o, c: got.append((k, o.index, o.start_ns, c)),
                     lambda o: [9.0], lambda: warmed.append(True))
    assert warmed == [True] and workers.stopped is False  # a clean finish
    assert workers.started[0] - workers.started[1] == 5_000  # the same instant, two clocks
    # worker 1's times come onto the driver's clock; the driver counts what 0 left to it
    assert got == [(1, 1, 6_000, [1.0, 2.0]), (0, 0, 2_000, [9.0])]
    assert duration == 900


@pytest.mark.parametrize(("msg", "words"), [(("error", "OSError: boom"), "OSError: boom"),
                                             (("exit", -9), "exit code -9")])
def test_a_worker_fault_stops_the_run_naming_the_worker(msg: Message, words: str) -> None:
    workers = _Scripted([[(0, ("ready",)), (1, ("ready",))], [(1, msg)]], offsets=[0, 0])
    with pytest.raises(MeasureError, match=f"worker 1 of 2 \\(h1\\).*{words}"):
        drive(workers, 2, lambda k, o, c: None, lambda o: [])
    assert workers.stopped is True  # the others stopped at once


def test_shift_moves_absolute_times_only() -> None:
    o = shift(_outcome(0, 100), 1_000)
    assert (o.start_ns, o.end_ns, o.release_ns, o.chunk_times_ns) == (1_100, 1_150, 1_095,
                                                                      [1_110, 1_120])
