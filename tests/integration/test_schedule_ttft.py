"""TTFT from the schedule (issue 27): with a request rate, ``ttft_from_schedule_ms`` counts
from the instant the seeded schedule had the request due. Under a ``--max-concurrency`` below
what the rate needs, requests wait for a slot, and TTFT from the schedule exceeds TTFT from
the send by exactly that wait (``queue_ms``, plus the release lag, which stays small); when
nothing waits the two agree. The scripted server runs in its own process, as an engine."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchlib.measure import MeasureConfig, measure, read_requests, requests_path


def _run(server: Any, tmp_path: Path, tiny_model: Path, name: str, **kw: Any) -> Any:
    out = tmp_path / f"{name}.json"
    args: dict[str, Any] = dict(base_url=server.url, model="scripted", tokenizer=tiny_model,
                                input_len=16, output_len=10, num_prompts=20,
                                burstiness=float("inf"), result_json=out, disable_tqdm=True)
    cfg = MeasureConfig(**{**args, **kw})
    return measure(cfg), read_requests(requests_path(out))


def test_schedule_ttft_exceeds_send_ttft_by_the_wait_for_a_slot(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "30", "--itl-ms", "5")
    # each request holds its slot ~75 ms; at 40 req/s one slot needs 3: requests queue
    result, records = _run(server, tmp_path, tiny_model, "queued", request_rate=40.0,
                           max_concurrency=1)
    assert result.completed == 20
    waited = [r for r in records if r.queue_ms > 5.0]
    assert len(waited) >= 15, [r.queue_ms for r in records]
    for r in records:
        assert r.ttft_ms is not None and r.ttft_from_schedule_ms is not None
        assert r.release_lag_ms is not None and 0 <= r.release_lag_ms < 20.0, r.release_lag_ms
        assert r.ttft_from_schedule_ms - r.ttft_ms == pytest.approx(
            r.queue_ms + r.release_lag_ms, abs=1e-6)
    assert result.median_ttft_from_schedule_ms is not None
    assert result.median_ttft_text_ms is not None
    assert result.median_ttft_from_schedule_ms > result.median_ttft_text_ms + 100.0
    # the late ones waited for every earlier request: the wait grows along the schedule
    by_index = sorted(records, key=lambda r: r.index)
    assert by_index[-1].queue_ms > by_index[1].queue_ms + 200.0


def test_schedule_ttft_equals_send_ttft_when_nothing_waits(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "30", "--itl-ms", "5")
    # 10 req/s with 4 slots: a request ends (~75 ms) long before the next is due (100 ms)
    result, records = _run(server, tmp_path, tiny_model, "free", request_rate=10.0,
                           max_concurrency=4)
    assert result.completed == 20
    # no slot is ever waited for (that wait would last until a request ends, tens of ms):
    # what is left is the loop's own latency, as small as the release lag's (the CI's loaded
    # machine once took 1.3 ms to send its first request)
    assert statistics.median(r.queue_ms for r in records) < 1.0, [r.queue_ms for r in records]
    for r in records:
        assert r.ttft_ms is not None and r.ttft_from_schedule_ms is not None
        assert r.queue_ms < 20.0, r.queue_ms
        assert r.release_lag_ms is not None and r.release_lag_ms < 20.0
        # nothing waited: the two differ only by the client's own release lag
        assert r.ttft_from_schedule_ms - r.ttft_ms == pytest.approx(
            r.queue_ms + r.release_lag_ms, abs=1e-6)
    assert result.median_ttft_from_schedule_ms == pytest.approx(
        result.median_ttft_text_ms, abs=5.0)


def test_no_schedule_ttft_without_a_rate(scripted: Callable[..., Any], tmp_path: Path,
                                         tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "5", "--itl-ms", "1")
    result, records = _run(server, tmp_path, tiny_model, "burst", max_concurrency=2,
                           num_prompts=4)
    assert result.median_ttft_from_schedule_ms is None
    assert "median_ttft_from_schedule_ms" not in result.to_json()
    assert all(r.ttft_from_schedule_ms is None for r in records)
