"""The measure step's summary table and each measurement's cited figures, from the typed
results."""

from __future__ import annotations

import pandas as pd

from benchlib.energy import EnergyResult
from benchlib.runs import (
    ENERGY_FIGURES,
    TABLE_COLUMNS,
    MeasureStep,
    figures,
    measurements,
    summary_table,
)

STEP = MeasureStep.model_validate({
    "chat/c1": {"scenario": "chat", "concurrency": 1, "completed": 4, "failed": 0,
                "endpoint_type": "chat", "median_tpot_ms": 4.0, "p99_ttft_ms": 9.0,
                "max_itl_ms": 31.5, "mean_request_decode_rate": 240.0,
                "server_metrics": {"kv_cache_usage_peak": 0.25},
                "kv_usage_vs_plan": {"expected": 0.5, "capacity_tokens": 10,
                                     "tokens_per_request": 5, "capacity_flagged": False},
                "energy": EnergyResult(source="nvml", reason=None, energy_j=8.0,
                                       avg_power_w=2.0).model_dump(mode="json"),
                "timing": {"client_bound": True, "client_bound_figures": {"median_ttft_ms":
                                                                          0.034}},
                "benchlib": {"input_len": 64, "output_len": 8, "dataset": "text",
                             "random_range_ratio": 0.0, "range_ratio_mode": "vllm",
                             "num_warmups": 0, "seed": 0, "percentiles": [99.0],
                             "goodput": {}, "base_url": "http://h", "requests_jsonl": None,
                             "prompt_prefix_share": {"prompts": 4, "sharing": 1,
                                                     "cacheable_tokens": 16,
                                                     "total_tokens": 256, "longest": 20,
                                                     "block": 16}}},
    "chat/c4": {"scenario": "chat", "concurrency": 4, "completed": 8, "failed": 0},
    "long/ramp": {"scenario": "long", "input_lens": [8]}})


def test_one_row_per_measurement_with_the_steps_additions() -> None:
    table = summary_table(STEP)
    assert list(table.columns) == TABLE_COLUMNS and len(table) == 2  # the ramp is apart
    row = table.iloc[0]
    assert row["per_user_tok_s"] == 250.0 and row["p99_ttft_ms"] == 9.0
    assert row["endpoint"] == "chat" and row["kv_cache_usage_peak"] == 0.25
    assert row["kv_cache_usage_expected"] == 0.5 and row["avg_power_w"] == 2.0
    assert row["client_bound_by"] == "median_ttft_ms ±3.4%"
    # seed 000's worst stall and seed 003's speed, beside TPOT
    assert row["max_itl_ms"] == 31.5 and row["mean_request_decode_rate"] == 240.0
    # one of the text's four prompts shares a whole block with another; c4 was not counted
    assert row["prefix_sharing_fraction"] == 0.25
    assert pd.isna(table.iloc[1]["prefix_sharing_fraction"])


def test_measurements_and_their_cited_figures() -> None:
    found = [(s, c) for s, c, _ in measurements(STEP)]
    assert found == [("chat", 1), ("chat", 4)]
    cited = figures(STEP.measurements["chat/c1"])
    assert cited["per_user_tok_s"] == 250.0 and cited["energy_j"] == 8.0
    assert set(ENERGY_FIGURES) <= set(cited)
    assert cited["median_tpot_ms"] == 4.0 and "duration" not in cited  # as written
