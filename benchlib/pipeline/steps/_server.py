"""The server's side of each measurement: its ``/metrics`` sampled around the scenario
(:class:`~benchlib.measure.MetricsSampler`, baseline taken after the warmups), kept whole
beside the result JSON (``<result>.server.json``: counters, gauges, the sampled series) and
summarised into the step's results — KV-cache usage peak, running / waiting peaks,
preemptions, prefix-cache hits — and, for a speculating engine, the acceptance it reports
set against what the client saw (:func:`~benchlib.measure.spec_decode_report`)."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.adapters import adapter
from benchlib.measure import (
    ClientStreams,
    MetricsSampler,
    RequestRecord,
    ServerMetrics,
    read_requests,
    requests_path,
    spec_decode_report,
)
from benchlib.pipeline._standalone import url_context
from benchlib.recipe import Recipe, Scenario
from benchlib.runs import ServerSide, SpeculativeSide

__all__ = ["sampler_for", "server_json", "server_side"]

def sampler_for(recipe: Recipe, base_url: str, api_key: str | None) -> MetricsSampler | None:
    """A started sampler of the recipe's engine, or None for an engine whose metric names
    the kit does not know (an ``endpoint``, open-jet)."""
    names = adapter(recipe.engine.kind).metrics
    if names is None:
        return None
    sampler = MetricsSampler(base_url, names,
                             api_key=api_key, ssl_context=url_context(recipe, base_url))
    sampler.start()
    return sampler


def server_json(result_json: Path) -> Path:
    """``chat-c1.json`` → ``chat-c1.server.json``."""
    return result_json.with_name(result_json.stem + ".server.json")


def _peak(metrics: ServerMetrics, name: str) -> float | None:
    stats = getattr(metrics.gauges, name)
    return None if stats is None else float(stats.peak)


def _every_repeat(result_json: Path) -> list[RequestRecord]:
    """The records of every repeat of a measurement: the server's counters span them all
    (its baseline is taken once, before the first repeat's timed load)."""
    data = json.loads(result_json.read_text(encoding="utf-8"))
    names = [r.get("result_json") for r in data.get("repeats") or []][1:]
    paths = [result_json, *(result_json.with_name(str(n)) for n in names if n)]
    return [rec for p in paths for rec in read_requests(requests_path(p))]


def server_side(recipe: Recipe, s: Scenario, result_json: Path, metrics: ServerMetrics,
                concurrency: int) -> tuple[ServerSide, SpeculativeSide | None]:
    """Write the whole record beside the result; return what the step's results keep: the
    summary of ``/metrics``, and a speculating engine's acceptance (None when it does not
    speculate)."""
    path = server_json(result_json)
    path.write_text(metrics.model_dump_json(indent=1) + "\n", encoding="utf-8")
    c = metrics.counters
    hits = (c.prefix_cache_hits / c.prefix_cache_queries
            if c.prefix_cache_hits is not None and c.prefix_cache_queries else None)
    out = ServerSide(
        file=path.name, scrapes=metrics.scrapes, failed_scrapes=metrics.failed_scrapes,
        missing=metrics.missing, kv_cache_usage_peak=_peak(metrics, "kv_cache_usage"),
        requests_running_peak=_peak(metrics, "requests_running"),
        requests_waiting_peak=_peak(metrics, "requests_waiting"),
        preemptions=c.preemptions, prefix_cache_hit_rate=hits,
        generation_tokens=c.generation_tokens, engine_steps=c.engine_steps)
    if not recipe.engine.speculative.on:
        return out, None
    records = _every_repeat(result_json)
    report = spec_decode_report(
        metrics, ClientStreams.from_records(records, s.endpoint), max_concurrency=concurrency,
        names=adapter(recipe.engine.kind).metrics,
        server_timings=[r.server_timings for r in records])
    server = report.server or report.timings
    rec = report.reconciliation
    return out, SpeculativeSide(
        method=recipe.engine.speculative.label,
        source=server.source if server else None,
        acceptance_rate=server.acceptance_rate if server else None,
        mean_acceptance_length=server.mean_acceptance_length if server else None,
        per_position_acceptance=server.per_position_acceptance if server else None,
        draft_tokens=server.draft_tokens if server else None,
        accepted_tokens=server.accepted_tokens if server else None,
        client_tokens_per_chunk=report.client.tokens_per_chunk,
        client_accepted_tokens=report.client.accepted_tokens,
        reconciled=rec.reconciled, why_not=rec.why_not,
        accepted_rel_diff=rec.accepted_rel_diff, output_rel_diff=rec.output_rel_diff,
        truncation_allowance=rec.truncation_allowance,
        residual_within_allowance=rec.residual_within_allowance,
        timings_rel_diff=report.timings_rel_diff)
