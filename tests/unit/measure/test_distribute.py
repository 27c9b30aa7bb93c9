"""The result's ``workers`` block: each worker's share, its start lag and its flags."""

from __future__ import annotations

from types import SimpleNamespace

from benchlib.measure import RequestOutcome
from benchlib.measure.load._distribute import _info
from benchlib.measure.load._split import LATE_START_MS, WorkerSplit, partition

MS = 1_000_000


def _sent(index: int, due_ms: float, late_ms: float) -> RequestOutcome:
    due = int(due_ms * MS)
    release = due + int(late_ms * MS)
    return RequestOutcome(index=index, prompt_len=1, start_ns=release, release_ns=release,
                          due_ns=due)


def test_a_worker_whose_first_request_went_out_late_is_flagged() -> None:
    offsets = [0.0, 0.0, 0.010, 0.010]
    shards = partition(offsets, None, 0, 2)
    # worker 0 (requests 0, 2) on time; worker 1 (1, 3) got the start 20 ms late, and its
    # second request then went out on time: only the start counts
    outcomes = [_sent(0, 0, 0.3), _sent(1, 0, 20), _sent(2, 10, 0.1), _sent(3, 10, 10)]
    workers = SimpleNamespace(hosts=["a", "a"], wall_offsets=[0, 0], uncertainties=[0, 0])
    info = _info(WorkerSplit(2, "given", "processes"), workers,
                 shards, outcomes, {0: 0, 2: 0, 1: 1, 3: 1})
    assert [w.start_lag_ms for w in info.workers] == [0.3, 20.0]
    assert info.late_start_workers == [1] and info.late_start_limit_ms == LATE_START_MS
    # the release lag is in each worker's timing block too
    assert info.workers[1].timing.max_release_lag_ms == 20.0
    assert info.workers[0].timing.max_release_lag_ms == 0.3


def test_a_worker_that_sent_nothing_has_no_start_lag() -> None:
    shards = partition([0.0, 0.0], None, 0, 2)
    never = RequestOutcome(index=1, prompt_len=1, start_ns=0)  # never released
    workers = SimpleNamespace(hosts=["a", "b"], wall_offsets=[0, 0], uncertainties=[0, 0])
    info = _info(WorkerSplit(2, "given", "processes"), workers,
                 shards, [_sent(0, 0, 0), never], {0: 0, 1: 1})
    assert info.workers[1].start_lag_ms is None and info.late_start_workers == []
