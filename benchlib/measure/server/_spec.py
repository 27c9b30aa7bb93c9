"""Speculative decoding seen from both sides: the server's counters and the client's streams.

The server says how its drafts fared (:class:`SpecAcceptance`, vLLM's definitions from
``vllm/v1/spec_decode/metrics.py``: acceptance rate = accepted / draft tokens, mean
acceptance length = 1 + accepted / drafts, the bonus token included, and per position
accepted / drafts). The client sees tokens (the server's usage) and chunks
(:class:`ClientStreams`). When the engine sends one chunk per engine step, a step carries
1 + the tokens accepted in it, so over the scenario

* client output tokens − client chunks = the server's accepted draft tokens, and
* client output tokens = the server's generated tokens,

which :func:`spec_decode_report` checks (:class:`Reconciliation`, 2 % by default). It says
why when the check cannot apply: an engine that streams one token per event whatever was
accepted (llama.cpp: ``process_token`` per accepted id), concurrency above 1 (vLLM's
``RequestOutputCollector`` merges the steps of a request whose chunks the API server has not
sent yet), a stream interval above 1, warmup requests inside the counters' window (take the
baseline after them: :meth:`MetricsSampler.mark <benchlib.measure.MetricsSampler.mark>`), or
other requests the server finished meanwhile. Where it applies, two residuals remain, in
opposite directions: in a request's last step, draft tokens accepted past ``max_tokens`` are
counted by vLLM but never sent, so the client's figure is smaller, by at most k per request
that hit its limit (``truncation_allowance``); and a step whose output the API server merged
into the next chunk (it fell behind the engine) removes a chunk, so the client's figure is
larger by one; the engine's own step count (``steps_server``) shows how many. Measured here
(vLLM CPU 0.32, n-gram k=4, 8 × 256 tokens): 1.0–1.3 % in all, 0–3 merged steps in ~700.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchlib.measure.results._records import RequestRecord
from benchlib.measure.server._server_metrics import MetricNames, ServerMetrics
from benchlib.measure.wire._request import EndpointKind, RequestOutcome

__all__ = ["ClientStreams", "Reconciliation", "SpecAcceptance",
           "SpecDecodeReport", "spec_decode_report"]

class SpecAcceptance(BaseModel):
    """How the drafts fared, as the server counted them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["metrics", "timings"] = Field(
        description="metrics: the /metrics counters' increase over the scenario; timings: "
                    "the sum of llama.cpp's per-request timings (draft_n, draft_n_accepted)")
    drafts: float | None = Field(description="drafts verified (null: not counted)")
    draft_tokens: float = Field(description="draft tokens proposed")
    accepted_tokens: float = Field(description="draft tokens accepted")
    acceptance_rate: float | None = Field(description="accepted / draft tokens")
    mean_acceptance_length: float | None = Field(
        description="1 + accepted / drafts: tokens per verified draft, the bonus token "
                    "included (vLLM's definition)")
    per_position_acceptance: list[float] | None = Field(
        description="accepted at draft position i / drafts, from position 0")


class ClientStreams(BaseModel):
    """What the client saw over the successful requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int = Field(description="requests sent (successful or not)")
    succeeded: int = Field(description="successful requests, the ones counted below")
    output_tokens: int = Field(description="Σ output tokens (the server's usage where sent)")
    output_tokens_from_usage: bool = Field(
        description="every count came from the server's usage (not re-tokenized)")
    chunks: int = Field(
        description="Σ events with choices, less chat's leading role-only chunk: one per "
                    "engine step where the engine streams per step")
    content_chunks: int = Field(description="Σ events carrying generated text")
    tokens_per_chunk: float | None = Field(description="output_tokens / chunks")
    accepted_tokens: int = Field(
        description="output_tokens − chunks: the draft tokens accepted, if each chunk is one "
                    "engine step")
    finished_by_length: int = Field(
        description="successful requests that ended at their token limit (finish_reason "
                    "length): their last step may have had accepted tokens cut off")

    @classmethod
    def _build(cls, rows: Sequence[tuple[bool, int, str, int, int, str | None]],
               endpoint: EndpointKind) -> ClientStreams:
        """From (success, output tokens, their source, choice events, text events, finish
        reason) per request."""
        out = chunks = content = 0
        usage = True
        ok = [r for r in rows if r[0]]
        for _, tokens, source, events, texts, _ in ok:
            out += tokens
            usage &= source == "usage"
            # chat streams a role-only chunk first (no text, no token): not an engine step
            chunks += events - (endpoint == "chat" and events > texts)
            content += texts
        return cls(requests=len(rows), succeeded=len(ok), output_tokens=out,
                   output_tokens_from_usage=usage and bool(ok), chunks=chunks,
                   content_chunks=content, tokens_per_chunk=out / chunks if chunks else None,
                   accepted_tokens=out - chunks,
                   finished_by_length=sum(r[5] == "length" for r in ok))

    @classmethod
    def from_records(cls, records: Sequence[RequestRecord], endpoint: EndpointKind
                     ) -> ClientStreams:
        """From a run's ``.requests.jsonl`` records (:func:`~benchlib.measure.read_requests`)."""
        return cls._build([(r.success, r.output_tokens or 0, r.output_tokens_source,
                            len(r.itl_ms) + 1 if r.ttft_first_choice_ms is not None else 0,
                            len(r.chunk_tokens), r.finish_reason) for r in records], endpoint)

    @classmethod
    def from_outcomes(cls, outcomes: Sequence[RequestOutcome], endpoint: EndpointKind
                      ) -> ClientStreams:
        """From the run's :class:`~benchlib.measure.RequestOutcome` objects."""
        return cls._build([(o.success, o.output_tokens, o.output_tokens_source,
                            len(o.itl_ns) + 1 if o.ttft_ns is not None else 0,
                            len(o.chunk_times_ns), o.finish_reason) for o in outcomes], endpoint)


class Reconciliation(BaseModel):
    """Client chunks and tokens against the server's counters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reconciled: bool | None = Field(
        description="output tokens within tolerance, and accepted tokens within tolerance "
                    "or short of the server's by no more than the tokens max_tokens cut off "
                    "(truncation_allowance); null: the check does not apply (why_not says why)")
    why_not: str | None = Field(description="why the check does not apply (null: it does)")
    tolerance: float = Field(description="largest relative difference accepted")
    accepted_client: int = Field(description="client output tokens − chunks")
    accepted_server: float | None = Field(description="the server's accepted-token increase")
    accepted_rel_diff: float | None = Field(
        description="|client − server| / server for accepted tokens (null: not computable)")
    output_client: int = Field(description="client output tokens")
    output_server: float | None = Field(description="the server's generated-token increase")
    output_rel_diff: float | None = Field(description="|client − server| / server for tokens")
    truncation_allowance: float | None = Field(
        description="k × requests that ended at their token limit: accepted tokens the server "
                    "may count beyond the client's, cut off by the limit in a last step (null: "
                    "k unknown)")
    residual_within_allowance: bool | None = Field(
        description="0 ≤ accepted_server − accepted_client ≤ truncation_allowance: the "
                    "difference is the cut-off tokens alone (null: the check does not apply "
                    "or k is unknown)")
    steps_server: float | None = Field(
        description="the server's engine-step increase (vLLM: steps with output); at "
                    "concurrency 1, close to the client's chunks (not part of the check)")


class SpecDecodeReport(BaseModel):
    """Speculative decoding over one scenario, from the server and from the client."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: SpecAcceptance | None = Field(description="from the /metrics counters (null: "
                                                      "the server exposes no draft counter)")
    timings: SpecAcceptance | None = Field(description="from per-request server timings "
                                                       "(llama.cpp), when given")
    timings_rel_diff: float | None = Field(
        description="|timings − metrics| / metrics for accepted tokens: the server's two "
                    "accounts against each other (null: not both given)")
    client: ClientStreams = Field(description="what the client saw")
    reconciliation: Reconciliation = Field(description="client against server")


def _rel(client: float, server: float | None) -> float | None:
    """|client − server| / server; 0 when both are 0, null when only the server's is."""
    if server is None:
        return None
    if server == 0:
        return 0.0 if client == 0 else None
    return abs(client - server) / server


def _from_metrics(metrics: ServerMetrics) -> SpecAcceptance | None:
    """The acceptance figures from the counters' increase (null without draft counters)."""
    c = metrics.counters
    if c.spec_draft_tokens is None or c.spec_accepted_tokens is None:
        return None
    drafts = c.spec_drafts
    per_pos = (None if c.spec_accepted_per_position is None or not drafts
               else [a / drafts for a in c.spec_accepted_per_position])
    return SpecAcceptance(
        source="metrics", drafts=drafts, draft_tokens=c.spec_draft_tokens,
        accepted_tokens=c.spec_accepted_tokens,
        acceptance_rate=(c.spec_accepted_tokens / c.spec_draft_tokens
                         if c.spec_draft_tokens else None),
        mean_acceptance_length=1 + c.spec_accepted_tokens / drafts if drafts else None,
        per_position_acceptance=per_pos)


def _from_timings(timings: Sequence[Mapping[str, Any] | None]) -> SpecAcceptance | None:
    """The acceptance figures summed over llama.cpp's per-request ``timings`` (null: none
    carried draft_n and draft_n_accepted)."""
    drafted = accepted = 0.0
    seen = False
    for t in timings:
        if t and t.get("draft_n") is not None and t.get("draft_n_accepted") is not None:
            drafted += float(t["draft_n"])
            accepted += float(t["draft_n_accepted"])
            seen = True
    if not seen:
        return None
    return SpecAcceptance(source="timings", drafts=None, draft_tokens=drafted,
                          accepted_tokens=accepted,
                          acceptance_rate=accepted / drafted if drafted else None,
                          mean_acceptance_length=None, per_position_acceptance=None)


def _why_not(metrics: ServerMetrics | None, client: ClientStreams, names: MetricNames | None,
             max_concurrency: int | None, stream_interval: int, warmups_in_window: int
             ) -> str | None:
    """Why the chunk/step reconciliation cannot hold for this scenario (None: it can)."""
    if client.succeeded == 0:
        return "no request succeeded"
    if names is None:
        return "the engine is unknown, so what its chunks carry is unknown"
    if names.step_chunks is not None:
        return names.step_chunks
    if max_concurrency != 1:
        return (f"concurrency {max_concurrency or 'unlimited'}: above 1, a request's steps "
                "are merged into one chunk whenever the API server falls behind")
    if stream_interval > 1:
        return f"stream interval {stream_interval}: each chunk holds several steps"
    if warmups_in_window > 0:
        return (f"{warmups_in_window} warmup request(s) are inside the counters' window: take "
                "the baseline after them (MetricsSampler.mark)")
    if metrics is None or metrics.window_s is None:
        return "no server counters (no baseline or no final scrape)"
    c = metrics.counters
    if c.spec_accepted_tokens is None or c.generation_tokens is None:
        return "the server exposes no accepted-token or generated-token counter"
    finished = c.requests_finished
    if finished is not None and finished != client.requests:
        return (f"the server finished {finished:g} requests in the window, the client sent "
                f"{client.requests}: other requests are in its counters")
    if not client.output_tokens_from_usage:
        return "some output tokens were re-tokenized, not the server's usage"
    return None


def spec_decode_report(metrics: ServerMetrics | None, client: ClientStreams, *,
                       max_concurrency: int | None, names: MetricNames | None = None,
                       stream_interval: int = 1, warmups_in_window: int = 0,
                       server_timings: Sequence[Mapping[str, Any] | None] | None = None,
                       tolerance: float = 0.02) -> SpecDecodeReport:
    """Speculative decoding over one scenario: ``metrics`` from a
    :class:`~benchlib.measure.MetricsSampler` around it, ``client`` from its records;
    ``names``: the engine's metric names (its adapter's; None: the engine is unknown, so no
    reconciliation); ``warmups_in_window``: warmup requests the counters
    include (0 when the baseline was marked after them); ``server_timings``: per-request
    ``timings`` objects (llama.cpp's ``draft_n``, ``draft_n_accepted``), when recorded."""
    c = metrics.counters if metrics is not None and metrics.window_s is not None else None
    accepted = c.spec_accepted_tokens if c is not None else None
    generated = c.generation_tokens if c is not None else None
    acc_diff, out_diff = _rel(client.accepted_tokens, accepted), _rel(client.output_tokens,
                                                                       generated)
    why = _why_not(metrics, client, names, max_concurrency, stream_interval,
                   warmups_in_window)
    k = (len(c.spec_accepted_per_position) if c is not None
         and c.spec_accepted_per_position is not None else None)
    allowance = k * client.finished_by_length if k is not None else None
    within = (None if why is not None or allowance is None or accepted is None
              else 0 <= accepted - client.accepted_tokens <= allowance)
    # accepted tokens past max_tokens are counted by the server, never sent: a difference
    # the cut-off tokens explain (within) reconciles too; output tokens must agree
    ok = (None if why is not None else acc_diff is not None and out_diff is not None
          and (acc_diff <= tolerance or bool(within)) and out_diff <= tolerance)
    server = _from_metrics(metrics) if c is not None and metrics is not None else None
    timed = _from_timings(server_timings) if server_timings is not None else None
    return SpecDecodeReport(
        server=server, timings=timed,
        timings_rel_diff=(_rel(timed.accepted_tokens, server.accepted_tokens)
                          if timed is not None and server is not None else None),
        client=client,
        reconciliation=Reconciliation(
            reconciled=ok, why_not=why, tolerance=tolerance,
            accepted_client=client.accepted_tokens, accepted_server=accepted,
            accepted_rel_diff=acc_diff, output_client=client.output_tokens,
            output_server=generated, output_rel_diff=out_diff,
            truncation_allowance=allowance, residual_within_allowance=within,
            steps_server=c.engine_steps if c is not None else None))
