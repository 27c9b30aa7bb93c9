"""ImportedResult: MeasureResult's key names, validated percentile keys, nulls in the JSON."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchlib.importers import ImportedResult

BASE = {"source_format": "vllm-json", "source_file": "r.json", "source_index": 0}
OURS = {"source_format", "source_version", "source_file", "source_index", "extra"}


def test_metric_fields_are_measure_results_keys() -> None:
    from benchlib.measure import MeasureResult

    assert set(ImportedResult.model_fields) - OURS <= set(MeasureResult.model_fields)


def test_every_metric_field_is_optional() -> None:
    result = ImportedResult.model_validate(BASE)
    assert all(getattr(result, name) is None
               for name in ImportedResult.model_fields if name not in OURS)
    assert all(field.description for field in ImportedResult.model_fields.values())


def test_percentile_keys_are_validated() -> None:
    result = ImportedResult.model_validate({**BASE, "p99_ttft_ms": 1.5, "p99.9_itl_ms": 2.0})
    assert result.percentile("ttft", 99) == 1.5
    assert result.percentile("itl", "99.9") == 2.0
    assert result.percentile("e2el", 99) is None
    # in numeric order, not the text's ("10" sorts before "9")
    ordered = ImportedResult.model_validate({**BASE, "p10_ttft_ms": 2.0, "p9_ttft_ms": 1.0,
                                             "p99.9_ttft_ms": 4.0, "p99_ttft_ms": 3.0})
    assert list(ordered.percentiles("ttft")) == ["p9", "p10", "p99", "p99.9"]
    with pytest.raises(ValidationError, match="not a p"):
        ImportedResult.model_validate({**BASE, "p99_ttft_text_ms": 1.0})
    with pytest.raises(ValidationError):
        ImportedResult.model_validate({**BASE, "mean_ttft": 1.0})


def test_to_json_keeps_nulls_and_puts_percentiles_after_std() -> None:
    result = ImportedResult.model_validate({**BASE, "mean_ttft_ms": 1.0, "p90_ttft_ms": 3.0,
                                            "p50_ttft_ms": 2.0, "request_rate": "inf",
                                            "extra": {"x": "inf"}})
    out = result.to_json()
    keys = list(out)
    assert keys[:4] == ["source_format", "source_version", "source_file", "source_index"]
    assert keys[keys.index("std_ttft_ms") + 1:keys.index("std_ttft_ms") + 3] == [
        "p50_ttft_ms", "p90_ttft_ms"]
    assert keys[-1] == "extra" and out["extra"] == {"x": "inf"}
    assert out["median_ttft_ms"] is None and out["failed"] is None
    assert out["request_rate"] == "inf"
