"""Speculative decoding from both sides: vLLM's acceptance figures from the counters, the
client's chunks and tokens, and their reconciliation (or why it does not apply)."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from benchlib.adapters import adapter
from benchlib.measure import (
    ClientStreams,
    RequestRecord,
    ServerCounters,
    ServerGauges,
    ServerMetrics,
    SpecDecodeReport,
    spec_decode_report,
)

from ._outcomes import outcome

# the reference run here: vLLM CPU 0.32, n-gram k=4, the tiny model
REFERENCE: dict[str, Any] = {"spec_drafts": 312.0, "spec_draft_tokens": 1074.0, "spec_accepted_tokens": 653.0,
             "spec_accepted_per_position": [233.0, 168.0, 137.0, 115.0]}


def _report(metrics: ServerMetrics | None, client: ClientStreams, *, engine: str | None = None,
            **kwargs: Any) -> SpecDecodeReport:
    """:func:`spec_decode_report` with the metric names (its adapter's) of ``engine``, by
    default the engine the metrics name, as the pipeline passes its recipe's."""
    engine = engine or (metrics.engine if metrics is not None else None)
    names = adapter(engine).metrics if engine is not None else None
    return spec_decode_report(metrics, client, names=names, **kwargs)


def _metrics(engine: str = "vllm", window: bool = True, **counters: Any) -> ServerMetrics:
    return ServerMetrics(
        engine=engine, verified=True, metrics_url="http://x/metrics",
        interval_s=0.5, t0_perf_counter_s=0.0, baseline="before",
        window_s=(0.0, 1.0) if window else None, scrapes=2, failed_scrapes=0, faults=[],
        counters=ServerCounters(**counters), gauges=ServerGauges(), missing=[],
        series_t_s=[], series={})


def _client(output: int = 1024, chunks: int = 382, requests: int = 8) -> ClientStreams:
    return ClientStreams(requests=requests, succeeded=requests, output_tokens=output,
                         output_tokens_from_usage=True, chunks=chunks, content_chunks=chunks,
                         tokens_per_chunk=output / chunks if chunks else None,
                         accepted_tokens=output - chunks, finished_by_length=requests)


def test_acceptance_follows_vllms_definitions() -> None:
    report = _report(_metrics(**REFERENCE, generation_tokens=1024.0), _client(),
                                max_concurrency=1)
    s = report.server
    assert s is not None and s.source == "metrics" and s.drafts == 312
    assert s.acceptance_rate == pytest.approx(653 / 1074)
    assert s.mean_acceptance_length == pytest.approx(1 + 653 / 312)
    assert s.per_position_acceptance == pytest.approx([233 / 312, 168 / 312, 137 / 312,
                                                       115 / 312])


def test_client_chunks_leave_out_the_chat_role_chunk() -> None:
    """A chat stream opens with a role-only chunk: not an engine step. A completions stream
    has none; an empty-text step chunk still counts as a step (not as content)."""
    chat = [outcome(0, 0, 5, [1, 1], 7, role_ms=1), outcome(1, 0, 5, [1], 4, role_ms=1),
            outcome(2, 0, 5, [1], 0, ok=False)]
    chat[0].finish_reason = "length"
    c = ClientStreams.from_outcomes(chat, "chat")
    assert c.finished_by_length == 1
    assert (c.requests, c.succeeded, c.output_tokens, c.chunks, c.content_chunks) == (
        3, 2, 11, 5, 5)
    assert c.accepted_tokens == 6 and c.tokens_per_chunk == pytest.approx(11 / 5)
    empty_step = outcome(0, 0, 5, [1, 1], 6, role_ms=1)  # as completions: an empty-text step
    d = ClientStreams.from_outcomes([empty_step], "completions")
    assert (d.chunks, d.content_chunks, d.accepted_tokens) == (4, 3, 2)
    records = [RequestRecord.from_outcome(o, [1.0] * len(o.chunk_texts) if o.success else [],
                                          0) for o in chat]
    assert ClientStreams.from_records(records, "chat") == c


def test_reconciled_within_two_percent() -> None:
    """The reference's figures: 1,024 tokens in 382 chunks is 642 accepted by the client's
    count against 653 by the server's (1.7 %): reconciled; 2.5 % off is not."""
    m = _metrics(**REFERENCE, generation_tokens=1024.0, requests_finished=8.0,
                 engine_steps=382.0)
    r = _report(m, _client(), max_concurrency=1).reconciliation
    assert r.reconciled is True and r.why_not is None
    assert r.accepted_client == 642 and r.accepted_rel_diff == pytest.approx(11 / 653)
    assert r.output_rel_diff == 0 and r.steps_server == 382
    # the 11 are tokens accepted past max_tokens: at most k = 4 per request at its limit
    assert r.truncation_allowance == 32 and r.residual_within_allowance is True
    off = _report(m, _client(chunks=355), max_concurrency=1).reconciliation
    assert off.reconciled is False and off.accepted_rel_diff == pytest.approx(16 / 653)
    assert off.residual_within_allowance is False  # the client saw more than was accepted
    off = _report(m, _client(chunks=372, output=1000),
                             max_concurrency=1).reconciliation
    assert off.reconciled is False and off.output_rel_diff == pytest.approx(24 / 1024)


_MERGED = ("above 1, a request's steps are merged into one chunk whenever the API server "
           "falls behind")


@pytest.mark.parametrize(("change", "why"), [
    ({"max_concurrency": 4}, f"concurrency 4: {_MERGED}"),
    ({"max_concurrency": None}, f"concurrency unlimited: {_MERGED}"),
    ({"engine": "llamacpp"}, "one event per token"),
    ({"engine": "sglang"}, "not verified"),
    ({"stream_interval": 2}, "stream interval 2: each chunk holds several steps"),
    ({"warmups_in_window": 1}, "1 warmup request(s) are inside the counters' window: take the "
                               "baseline after them (MetricsSampler.mark)"),
])
def test_why_the_check_does_not_apply(change: dict[str, Any], why: str) -> None:
    kwargs: dict[str, Any] = {"max_concurrency": 1} | change
    r = _report(_metrics(**REFERENCE, generation_tokens=1024.0), _client(),
                           **kwargs).reconciliation
    assert r.reconciled is None and r.why_not is not None and why in r.why_not
    if not change.get("engine"):  # the kit's own words, whole (an engine's are its adapter's)
        assert r.why_not == why
    assert r.accepted_rel_diff == pytest.approx(11 / 653)  # still shown
    # the figures stay, but no residual is judged where the check does not apply
    assert r.accepted_server == 653 and r.output_server == 1024
    assert r.truncation_allowance == 32 and r.residual_within_allowance is None


def test_an_unknown_engine_or_retokenized_output_says_so_whole() -> None:
    m = _metrics(**REFERENCE, generation_tokens=1024.0)
    unknown = spec_decode_report(m, _client(), max_concurrency=1, names=None).reconciliation
    assert unknown.why_not == "the engine is unknown, so what its chunks carry is unknown"
    outcomes = [outcome(0, 0, 5, [1, 1], 5), outcome(1, 0, 5, [1], 3)]
    outcomes[0].output_tokens_source = "tokenizer"
    client = ClientStreams.from_outcomes(outcomes, "completions")
    assert client.output_tokens_from_usage is False
    r = _report(m, client, max_concurrency=1).reconciliation
    assert r.why_not == "some output tokens were re-tokenized, not the server's usage"
    blind = _report(_metrics(window=False, **REFERENCE), _client(), max_concurrency=1)
    assert blind.reconciliation.why_not == "no server counters (no baseline or no final scrape)"
    bare = _report(_metrics(generation_tokens=1024.0), _client(), max_concurrency=1)
    assert bare.reconciliation.why_not == ("the server exposes no accepted-token or "
                                           "generated-token counter")


def test_client_streams_count_only_successes_and_every_usage() -> None:
    """``output_tokens_from_usage`` holds only when every success's count is the server's
    (in any order); a success with no token or no event is still a success; a chat stream
    without a role chunk loses no step; finish reasons other than length are not counted."""
    def run(sources: list[Literal["usage", "tokenizer"]]) -> list[Any]:
        out = [outcome(i, 0, 5, [1], 2) for i in range(len(sources))]
        for o, source in zip(out, sources, strict=True):
            o.output_tokens_source = source
        return out
    assert ClientStreams.from_outcomes(run(["usage", "usage"]), "chat").output_tokens_from_usage
    assert not ClientStreams.from_outcomes(run(["tokenizer", "usage"]),
                                           "chat").output_tokens_from_usage
    assert not ClientStreams.from_outcomes(run(["usage", "tokenizer"]),
                                           "chat").output_tokens_from_usage
    empty = outcome(0, 0, 5, [], 0)  # a success that generated nothing: one event
    silent = outcome(1, 0, 5, [], 0)
    silent.ttft_ns, silent.itl_ns = None, []  # no event at all
    silent.chunk_times_ns, silent.chunk_texts = [], []
    failed = outcome(2, 0, 5, [], 0, ok=False)
    failed.output_tokens = 3  # whatever it counted, a failure is not counted
    c = ClientStreams.from_outcomes([empty, silent, failed], "completions")
    assert (c.requests, c.succeeded, c.output_tokens, c.chunks) == (3, 2, 0, 1)
    records = [RequestRecord.from_outcome(o, [1.0] * len(o.chunk_texts), 0)
               for o in (empty, silent, failed)]
    assert ClientStreams.from_records(records, "completions") == c
    none = ClientStreams.from_outcomes([failed], "completions")
    assert none.chunks == 0 and none.tokens_per_chunk is None
    assert none.output_tokens_from_usage is False  # no success: nothing came from usage
    no_role = ClientStreams.from_outcomes([outcome(0, 0, 5, [1, 1], 6)], "chat")
    assert no_role.chunks == 3 and no_role.accepted_tokens == 3
    ends = [outcome(i, 0, 5, [1], 2) for i in range(4)]
    for o, reason in zip(ends, ["length", "stop", "length", "length"], strict=True):
        o.finish_reason = reason
    assert ClientStreams.from_outcomes(ends, "completions").finished_by_length == 3


@pytest.mark.parametrize(("accepted_client", "by_length", "reconciled", "within"), [
    (653, 8, True, True),     # exact: no residual
    (621, 8, True, True),     # 32 short = k × 8 at their limit, the allowance's edge (4.9 %)
    (620, 8, False, False),   # 33 short: one past it
    (660, 8, True, False),    # 7 over (1.1 %): within tolerance, not the cut-off tokens
    (637, 0, True, False),    # 13 short of 650 (2.0 % exactly), no request at its limit
    (636, 0, False, False),   # 14 short: past the tolerance
])
def test_the_residual_is_judged_at_its_edges(accepted_client: int, by_length: int,
                                             reconciled: bool, within: bool) -> None:
    m = _metrics(**(REFERENCE | {"spec_accepted_tokens": 650.0 if by_length == 0 else 653.0}),
                 generation_tokens=1024.0, requests_finished=8.0)
    client = _client(chunks=1024 - accepted_client).model_copy(
        update={"finished_by_length": by_length})
    r = _report(m, client, max_concurrency=1).reconciliation
    assert (r.reconciled, r.residual_within_allowance) == (reconciled, within)


def test_output_tokens_are_judged_at_the_tolerance_and_zero_counts_are_exact() -> None:
    m = _metrics(**REFERENCE, generation_tokens=1000.0, requests_finished=8.0)
    edge = _report(m, _client(output=980 + 642, chunks=980).model_copy(
        update={"output_tokens": 980}), max_concurrency=1).reconciliation
    assert edge.output_rel_diff == pytest.approx(0.02) and edge.reconciled is True
    past = _report(m, _client(output=979, chunks=979 - 642), max_concurrency=1).reconciliation
    assert past.reconciled is False
    # a server that accepted nothing: 0 against 0 is exact, anything against 0 is unknown
    zero = _metrics(spec_draft_tokens=0.0, spec_accepted_tokens=0.0, spec_drafts=0.0,
                    generation_tokens=8.0, requests_finished=1.0)
    same = _report(zero, _client(output=8, chunks=8, requests=1), max_concurrency=1)
    assert same.reconciliation.accepted_rel_diff == 0.0
    s = same.server
    assert s is not None and (s.acceptance_rate, s.mean_acceptance_length) == (None, None)
    more = _report(zero, _client(output=8, chunks=5, requests=1), max_concurrency=1)
    assert more.reconciliation.accepted_rel_diff is None
    one = _metrics(**(REFERENCE | {"spec_accepted_tokens": 1.0}), generation_tokens=8.0)
    assert _report(one, _client(output=8, chunks=5, requests=1),
                   max_concurrency=1).reconciliation.accepted_rel_diff == 2.0


def test_what_the_server_lacks_or_other_traffic_stops_the_check() -> None:
    no_spec = _report(_metrics(generation_tokens=1024.0), _client(),
                                 max_concurrency=1)
    assert no_spec.server is None
    assert "no accepted-token" in (no_spec.reconciliation.why_not or "")
    other = _report(_metrics(**REFERENCE, generation_tokens=1100.0,
                                        requests_finished=10.0), _client(), max_concurrency=1)
    assert "finished 10 requests" in (other.reconciliation.why_not or "")
    blind = _report(_metrics(window=False, **REFERENCE), _client(),
                               max_concurrency=1)
    assert blind.server is None and blind.reconciliation.accepted_server is None
    assert "no server counters" in (blind.reconciliation.why_not or "")
    nothing = _report(None, _client(requests=0, output=0, chunks=0),
                                 max_concurrency=1, engine="vllm")
    assert nothing.reconciliation.why_not == "no request succeeded"


def test_llamacpp_timings_give_the_per_request_side() -> None:
    timings = [{"draft_n": 12, "draft_n_accepted": 9, "predicted_n": 40}, None,
               {"draft_n": 8, "draft_n_accepted": 3}]
    report = _report(
        _metrics("llamacpp", spec_draft_tokens=20.0, spec_accepted_tokens=12.0,
                 spec_drafts=6.0, generation_tokens=80.0),
        _client(output=80, chunks=80, requests=3), max_concurrency=1, server_timings=timings)
    t = report.timings
    assert t is not None and t.source == "timings" and t.drafts is None
    assert (t.draft_tokens, t.accepted_tokens, t.acceptance_rate) == (20, 12, 0.6)
    assert report.server is not None and report.server.accepted_tokens == 12
    assert report.timings_rel_diff == 0
    assert "one event per token" in (report.reconciliation.why_not or "")


def test_a_server_with_half_the_draft_counters_or_none_in_its_timings() -> None:
    half = _metrics(spec_draft_tokens=100.0, generation_tokens=1024.0)  # no accepted counter
    assert _report(half, _client(), max_concurrency=1).server is None
    r = _report(_metrics(**{k: v for k, v in REFERENCE.items()
                            if k != "spec_accepted_per_position"}, generation_tokens=1024.0),
                _client(), max_concurrency=1).reconciliation
    assert r.truncation_allowance is None and r.residual_within_allowance is None  # k unknown
    m = _metrics("llamacpp", spec_draft_tokens=0.0, spec_accepted_tokens=0.0,
                 generation_tokens=8.0)
    none = _report(m, _client(output=8, chunks=8, requests=1), max_concurrency=1,
                   server_timings=[None, {"predicted_n": 8}])
    assert none.timings is None and none.timings_rel_diff is None
    idle = _report(m, _client(output=8, chunks=8, requests=1), max_concurrency=1,
                   server_timings=[{"draft_n": 0, "draft_n_accepted": 0}])
    assert idle.timings is not None and idle.timings.acceptance_rate is None
