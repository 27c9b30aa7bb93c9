"""A measure step's results read as people read them: one row per scenario × concurrency
(joules per output token beside TPOT, the watts after the engine's own figures), and each
measurement's figures under the names a write-up cites (:func:`figures`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pydantic import JsonValue

from benchlib.runs._measure import Measurement, MeasureStep

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ENERGY_FIGURES", "TABLE_COLUMNS", "figures", "measurements", "summary_table"]

TABLE_COLUMNS = ["scenario", "endpoint", "input_len", "output_len", "concurrency", "completed",
                 "failed", "median_ttft_ms", "median_ttft_text_ms", "p99_ttft_ms",
                 "median_tpot_ms", "p99_tpot_ms", "mean_request_decode_rate",
                 "energy_j_per_output_token",
                 "median_itl_ms", "median_e2el_ms", "output_throughput", "per_user_tok_s",
                 "median_text_chunks_per_s", "max_itl_ms", "mean_tokens_per_chunk",
                 "server_acceptance_length", "kv_cache_usage_peak",
                 "kv_cache_usage_expected", "requests_waiting_peak", "preemptions",
                 "avg_power_w", "peak_power_w", "idle_power_w",
                 "buffered_streams", "text_free_requests", "exact_ttft_fraction",
                 # a text dataset's prompts sharing a whole cache block with another
                 "prefix_sharing_fraction",
                 "client_bound", "client_bound_by",
                 "sdk_median_ttft_ms", "sdk_median_tpot_ms",
                 # a paced load: TTFT from the schedule's due time (client queueing included)
                 "median_ttft_from_schedule_ms"]
#: the figures of a measurement's ``energy`` block (benchlib.energy.EnergyResult) that its
#: record also carries at the top, for the table, the report and the write-up to cite
ENERGY_FIGURES = ("energy_j", "energy_j_per_output_token",
                  "energy_above_idle_j_per_output_token", "energy_j_per_request",
                  "avg_power_w", "peak_power_w", "idle_power_w", "energy_includes_idle")


def _worst_figure(figures: dict[str, float] | None) -> str | None:
    """``"median_ttft_ms ±3.4%"``: of a client-bound run's figures, the one its merged reads
    could move most, with the share (None when the run is not client-bound)."""
    if not figures:
        return None
    worst, share = max(figures.items(), key=lambda kv: float(kv[1]))
    return f"{worst} ±{float(share):.1%}"


def _energy(m: Measurement) -> dict[str, JsonValue]:
    """The :data:`ENERGY_FIGURES` of a measurement (null where none was measured)."""
    dumped = m.energy.model_dump(mode="json") if m.energy is not None else {}
    return {k: dumped.get(k) for k in ENERGY_FIGURES}


def _prefix_sharing(m: Measurement) -> float | None:
    """The share of a text dataset's prompts a prefix cache could serve a block of from
    another prompt (None: not counted)."""
    share = m.benchlib.prompt_prefix_share if m.benchlib is not None else None
    return share.sharing / share.prompts if share is not None and share.prompts else None


def _row(m: Measurement) -> dict[str, object]:
    server, spec, timing = m.server_metrics, m.speculative, m.timing
    fields = m.model_dump(include=set(TABLE_COLUMNS) & set(Measurement.model_fields))
    return {**fields, **{k: v for k, v in _energy(m).items() if k in TABLE_COLUMNS},
            "prefix_sharing_fraction": _prefix_sharing(m),
            "kv_cache_usage_peak": server.kv_cache_usage_peak if server else None,
            "requests_waiting_peak": server.requests_waiting_peak if server else None,
            "preemptions": server.preemptions if server else None,
            # the plan's expectation of that peak (02_launch's plan vs the engine)
            "kv_cache_usage_expected": m.kv_usage_vs_plan.expected
            if m.kv_usage_vs_plan else None,
            "server_acceptance_length": spec.mean_acceptance_length if spec else None,
            # how far the row can be trusted (see the measure result's timing block)
            "exact_ttft_fraction": timing.exact_ttft_fraction if timing else None,
            "client_bound": timing.client_bound if timing else None,
            # the figure the late reads could move most, by how much
            "client_bound_by": _worst_figure(timing.client_bound_figures) if timing else None,
            "endpoint": m.endpoint_type,
            # per user: decode speed after the first text (vLLM's TPOT starts at a role chunk)
            "per_user_tok_s": m.per_user_tok_s,
            # what the openai SDK saw (scenario sdk_view), beside the wire's
            "sdk_median_ttft_ms": m.sdk.median_ttft_ms if m.sdk else None,
            "sdk_median_tpot_ms": m.sdk.median_tpot_ms if m.sdk else None}


def summary_table(results: MeasureStep) -> pd.DataFrame:
    """One row per scenario × concurrency from a measure step's results."""
    import pandas as pd

    return pd.DataFrame([_row(m) for m in results.measurements.values()],
                        columns=TABLE_COLUMNS)


def measurements(results: MeasureStep) -> Iterator[tuple[str, int, Measurement]]:
    """Each measurement of a measure step's results, in :func:`summary_table`'s order:
    (scenario, concurrency, the measurement), scenario and concurrency read from its key."""
    for key, m in results.measurements.items():
        scenario, _, conc = key.rpartition("/c")
        yield scenario, int(conc), m


def figures(m: Measurement) -> dict[str, JsonValue]:
    """A measurement's figures under the names a write-up cites: its result keys as the
    results file has them, ``per_user_tok_s`` and the :data:`ENERGY_FIGURES` at the top."""
    return {**m.model_dump(mode="json", exclude_unset=True),
            "per_user_tok_s": m.per_user_tok_s, **_energy(m)}
