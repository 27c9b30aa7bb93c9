"""The split of a run among workers: the one schedule dealt, the slots shared, the default."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from benchlib.measure import MeasureConfig
from benchlib.measure.load._split import (
    STREAMS_PER_WORKER,
    auto_workers,
    partition,
    plan_workers,
)
from benchlib.measure.workload._arrivals import arrival_offsets


@pytest.mark.parametrize("workers", [1, 2, 3, 7])
@pytest.mark.parametrize("rate", [math.inf, 20.0])
def test_partition_sends_every_request_once_at_its_own_time(workers: int, rate: float) -> None:
    offsets = arrival_offsets(101, rate, 1.0, seed=3)
    shards = partition(offsets, None, 2, workers)
    sent = sorted((i, t) for s in shards for i, t in zip(s.indices, s.offsets, strict=True))
    assert sent == list(enumerate(offsets))  # the same requests at the same times
    assert [s.num_warmups for s in shards] == [2] + [0] * (workers - 1)
    sizes = [len(s.indices) for s in shards]
    assert max(sizes) - min(sizes) <= 1  # dealt evenly


@pytest.mark.parametrize(("limit", "workers", "slots"),
                         [(8, 2, [4, 4]), (7, 3, [3, 2, 2]), (3, 3, [1, 1, 1])])
def test_partition_shares_the_concurrency_limit(limit: int, workers: int,
                                                slots: list[int]) -> None:
    shards = partition([0.0] * 30, limit, 0, workers)
    assert [s.max_concurrency for s in shards] == slots
    assert sum(slots) == limit


def test_auto_workers_keeps_each_under_the_measured_load_and_the_cpus() -> None:
    assert auto_workers(STREAMS_PER_WORKER, 8)[0] == 1
    assert auto_workers(STREAMS_PER_WORKER + 1, 8)[0] == 2
    assert auto_workers(16 * STREAMS_PER_WORKER, 8)[0] == 7  # one CPU left to the driver
    count, why = auto_workers(16 * STREAMS_PER_WORKER, 2)
    assert count == 1 and "--ray-address" in why and "2 CPUs" in why


def _cfg(**kw: object) -> MeasureConfig:
    return MeasureConfig.model_validate({"base_url": "http://127.0.0.1:9", "model": "m",
                                         "dataset": "file", "dataset_path": __file__, **kw})


def test_plan_workers_counts_the_streams_a_run_can_have() -> None:
    assert plan_workers(_cfg(num_prompts=10)).count == 1
    split = plan_workers(_cfg(num_prompts=5000, max_concurrency=STREAMS_PER_WORKER))
    assert split.count == 1 and split.streams == STREAMS_PER_WORKER
    assert plan_workers(_cfg(num_prompts=10, workers=3)).chosen == "given"
    paced = plan_workers(_cfg(num_prompts=5000, request_rate=2.0))
    assert paced.count == 1 and "not known before the run" in paced.chosen
    ray = plan_workers(_cfg(num_prompts=10, ray_address="127.0.0.1:6379"))
    assert ray.backend == "ray" and ray.per_node and ray.count == 1


@pytest.mark.parametrize(("kw", "words"), [
    ({"num_prompts": 4, "workers": 5}, "num_prompts 4"),
    ({"num_prompts": 40, "max_concurrency": 2, "workers": 3}, "max_concurrency 2"),
])
def test_more_workers_than_work_is_refused_naming_the_field(kw: dict[str, int],
                                                            words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        _cfg(**kw)


def test_a_partition_with_a_worker_left_without_work_is_refused() -> None:
    with pytest.raises(ValueError, match="each needs one"):
        partition([0.0] * 4, 1, 0, 2)
    with pytest.raises(ValueError, match="each needs one"):
        partition([0.0] * 2, None, 0, 3)
