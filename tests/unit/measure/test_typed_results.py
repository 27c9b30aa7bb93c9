"""The typed result and request record write exactly what the dict-built ones wrote.

``golden/head.json`` was written by the code before the models (the result dict built in
``measure`` + ``summarize``, the record dict of ``_record``) for :func:`sample_run`'s outcomes;
the models must give the same keys, order, values and bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from benchlib.measure import (
    MeasureConfig,
    MeasureResult,
    RepeatSummary,
    RequestRecord,
    RunMetrics,
    RunSettings,
    SentKeys,
    Timing,
    TokenSources,
    Workload,
    read_requests,
    summarize,
)
from benchlib.measure.load._split import WorkersInfo
from benchlib.measure.results._records import RecordLog
from benchlib.measure.results._result import METRICS
from benchlib.measure.workload._prefix_share import PrefixShare

from ._outcomes import sample_run

GOLDEN = json.loads((Path(__file__).parent / "golden" / "head.json").read_text())
CONFIGS: dict[str, dict[str, Any]] = {
    "queued": dict(base_url="http://127.0.0.1:8000/v1/", model="m", endpoint="chat",
                   tokenizer=Path("/tok"), num_prompts=4, max_concurrency=2, request_rate=10.0,
                   burstiness=0.5, percentiles=(50.0, 99.9),
                   goodput={"ttft": 15.0, "e2el": 100.0}, result_json=Path("/r/run.json"),
                   seed=3, num_warmups=1, input_len=16, output_len=4, random_range_ratio=0.5,
                   range_ratio_mode="sglang", sampling={"top_p": 0.9}),
    "open": dict(base_url="http://h:1", model="m", dataset="file",
                 dataset_path=Path("/p.jsonl"), output_len=None, num_prompts=4),
}


def _result(name: str, **given: Any) -> MeasureResult:
    cfg = MeasureConfig(**CONFIGS[name])
    outcomes, counts = sample_run()
    metrics = summarize(outcomes, counts, duration_ns=60_000_000, percentiles=cfg.percentiles,
                        goodput=dict(cfg.goodput), max_concurrency=cfg.max_concurrency,
                        request_rate=cfg.request_rate)
    return MeasureResult.assemble(cfg, metrics, "20250101-000000", **given)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_result_json_keys_order_values_and_bytes_are_unchanged(name: str) -> None:
    result = _result(name)
    want = GOLDEN[name]["result"]
    got = result.to_json()
    assert list(got) == list(want)
    assert got == want
    text = json.dumps(got, indent=2, allow_nan=False, default=str) + "\n"
    assert text == GOLDEN["result_text"][name]
    # read back from the file: the same model, the same JSON
    assert MeasureResult.model_validate_json(text).to_json() == want


def test_typed_access_to_fields_and_percentiles() -> None:
    result = _result("queued")
    assert result.completed == 2 and result.timing.clock == result.clock
    assert result.output_tokens_source == TokenSources(usage=1, tokenizer=1)
    assert result.percentile("ttft", 99.9) == GOLDEN["queued"]["result"]["p99.9_ttft_ms"]
    assert result.percentile("client_queue_time", 50) is not None
    with pytest.raises(KeyError):
        result.percentile("ttft", 90)  # not asked for
    # conditional keys stay absent, not null, when they were not computed
    assert "mean_client_queue_time_ms" not in _result("open").to_json()


def test_unknown_extra_keys_are_refused() -> None:
    outcomes, counts = sample_run()
    metrics = summarize(outcomes, counts, duration_ns=1, percentiles=[99]).to_json()
    assert RunMetrics.model_validate(metrics).percentile("itl", 99) is not None
    with pytest.raises(ValidationError, match="p99_bogus_ms"):
        RunMetrics.model_validate({**metrics, "p99_bogus_ms": 1.0})
    with pytest.raises(ValidationError, match="not_a_key"):
        MeasureResult.model_validate({**_result("open").to_json(), "not_a_key": 1.0})


def test_request_records_are_unchanged_and_read_back_typed(tmp_path: Path) -> None:
    outcomes, counts = sample_run()
    records = [RequestRecord.from_outcome(o, c, outcomes[0].start_ns)
               for o, c in zip(outcomes, counts, strict=True)]
    assert [r.to_json() for r in records] == GOLDEN["records"]
    assert [json.dumps(r.to_json()) for r in records] == GOLDEN["record_lines"]
    path = tmp_path / "r.requests.jsonl"
    log = RecordLog(path)
    for r in records:
        log.write(r)
    log.close()
    assert path.read_text() == "".join(line + "\n" for line in GOLDEN["record_lines"])
    assert read_requests(path) == records


@pytest.mark.parametrize("model", [RequestRecord, RunMetrics, MeasureResult, RunSettings,
                                   Timing, TokenSources, Workload, MeasureConfig])
def test_every_field_is_documented(model: type[BaseModel]) -> None:
    """The descriptions are the documentation of the JSON keys and the flags."""
    missing = [n for n, f in model.model_fields.items() if not (f.description or "").strip()]
    assert not missing


def test_the_prompts_digest_the_sent_keys_and_the_workers_reach_the_result() -> None:
    """What the run passes beside the metrics lands in the file: the digest and the keys in
    the settings block, the split in a ``workers`` block that is absent for one process."""
    sent = SentKeys(sampling="kit", body_keys=["max_tokens", "model", "temperature"],
                    sampling_keys=["temperature"], length_keys=["max_tokens"], other_keys=[])
    workers = WorkersInfo(count=2, backend="processes", chosen="given", hosts=1, nodes=1,
                          client_bound_workers=[], workers=[])
    prefix = PrefixShare(prompts=4, sharing=2, cacheable_tokens=32, total_tokens=64,
                         longest=16, block=16)
    result = _result("queued", prompts_sha256="ab" * 32, workers=workers, sent=sent,
                     prefix=prefix)
    assert result.benchlib.prompts_sha256 == "ab" * 32
    assert result.benchlib.sent_keys == sent
    assert result.benchlib.prompt_prefix_share == prefix
    assert result.workers == workers
    got = result.to_json()
    assert list(got)[-2:] == ["benchlib", "workers"]
    assert MeasureResult.model_validate(got).workers == workers
    assert got["benchlib"]["prompt_prefix_share"]["sharing"] == 2
    plain = _result("queued").to_json()
    assert "workers" not in plain and "prompt_prefix_share" not in plain["benchlib"]


def test_a_repeat_summary_names_its_result_file_and_carries_its_headline_figures() -> None:
    """A repeat's line in the first repeat's file: the result JSON beside its request log
    (``run.requests.jsonl`` → ``run.json``), or null where none was written."""
    result = _result("queued")
    summary = RepeatSummary.of(2, result)
    assert summary == RepeatSummary(
        repeat=2, seed=3, result_json="run.json", completed=result.completed,
        failed=result.failed, duration=result.duration,
        median_ttft_ms=result.median_ttft_ms, median_tpot_ms=result.median_tpot_ms,
        median_itl_ms=result.median_itl_ms, output_throughput=result.output_throughput)
    # the sample run has every figure, so a figure lost on the way would show
    assert None not in (summary.median_ttft_ms, summary.median_tpot_ms, summary.median_itl_ms,
                        summary.output_throughput)
    assert RepeatSummary.of(0, _result("open")).result_json is None


def test_every_statistic_says_its_unit_and_that_it_is_null_without_a_success() -> None:
    """The statistics' descriptions are the result JSON's documentation: each names its
    statistic and metric, the population, the unit, and when it is null."""
    for metric, what in METRICS.items():
        for stat, word in (("mean", "mean"), ("median", "median"),
                           ("std", "standard deviation (ddof 0)")):
            field = MeasureResult.model_fields[f"{stat}_{metric}_ms"]
            assert field.description == (f"{word} of {what}, over successful requests, in ms; "
                                         "null when there is none")
