"""Exact number reading: printed text comes back as printed, unit changes on the decimal text."""

from __future__ import annotations

from decimal import Decimal

import pytest

from benchlib.importers._common import (
    MS_PER_S,
    Malformed,
    clean,
    json_float,
    json_int,
    member,
    percentile_key,
    text_float,
    text_int,
)


@pytest.mark.parametrize("text,scale,expected", [
    ("71.40", Decimal(1), 71.4),
    ("0.0714", MS_PER_S, 71.4),   # float(0.0714) * 1000 would be 71.39999999999999
    ("4.3270", Decimal(1), 4.327),
    ("0.0117", MS_PER_S, 11.7),
    ("1.0582149028778076", MS_PER_S, 1058.2149028778076),
])
def test_text_is_scaled_exactly(text: str, scale: Decimal, expected: float) -> None:
    assert text_float(text, "x", scale) == expected


def test_whole_numbers_printed_with_decimals() -> None:
    assert text_int("43.00", "Peak concurrent requests:") == 43
    with pytest.raises(Malformed, match="not a whole number"):
        text_int("43.50", "Peak concurrent requests:")
    with pytest.raises(Malformed, match="'abc' is not a number"):
        text_float("abc", "Mean TTFT (ms):")


def test_json_numbers() -> None:
    assert json_float(0.0714, "ttft", MS_PER_S) == 71.4
    assert json_float(None, "ttft") is None
    assert json_int(200.0, "request_count") == 200
    # the error names the field and the value, so the user finds it in the file
    with pytest.raises(Malformed, match=r"^request_count: 200\.5 is not a whole number$"):
        json_int(200.5, "request_count")
    with pytest.raises(Malformed, match=r"^duration: True is not a number$"):
        json_float(True, "duration")
    with pytest.raises(Malformed, match=r"^duration: '12' is not a number$"):
        json_float("12", "duration")


@pytest.mark.parametrize("p,key", [(99, "p99"), ("99.9", "p99.9"), ("50.0", "p50"),
                                   ("0.1", "p0.1"), (99.0, "p99")])
def test_percentile_key_is_vllms_spelling(p: str | float, key: str) -> None:
    assert percentile_key(p) == key


def test_clean_and_member() -> None:
    assert clean({"a": [float("inf"), 1.5], "b": float("nan")}) == {"a": ["inf", 1.5],
                                                                    "b": "nan"}
    assert clean((float("-inf"), -1.5)) == ["-inf", -1.5]
    assert member({"a": {"b": 1}}, "a") == {"b": 1}
    assert member({"a": 3}, "a") == {}
    assert member(None, "a") == {}
