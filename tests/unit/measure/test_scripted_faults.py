"""Fault selection in the scripted server: deterministic, spelled as the CLI spells it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from benchlib.scripted import FAULT_KINDS, FaultRule, ScriptConfig


def hits(rule: FaultRule, n: int = 20) -> list[int]:
    return [k for k in range(1, n + 1) if rule.selects(k)]


def test_every_and_start() -> None:
    assert hits(FaultRule.parse("reset:every=5")) == [5, 10, 15, 20]
    assert hits(FaultRule.parse("reset:every=5:start=2")) == [2, 7, 12, 17]
    assert hits(FaultRule.parse("reset")) == list(range(1, 21))


@given(st.floats(min_value=0.01, max_value=1.0), st.integers(min_value=1, max_value=500))
def test_fraction_is_spread_evenly_and_counts_exactly(fraction: float, n: int) -> None:
    rule = FaultRule(kind="http-500", fraction=fraction)
    assert abs(len(hits(rule, n)) - n * fraction) < 1.0 + 1e-6


def test_first_rule_that_selects_wins() -> None:
    cfg = ScriptConfig(faults=(FaultRule.parse("http-500:every=2"),
                               FaultRule.parse("stall:every=3:start=1")))
    assert [cfg.fault_for(k) for k in range(1, 7)] == [
        "stall", "http-500", None, "http-500", None, "http-500"]


@pytest.mark.parametrize("spec", ["nope", "reset:every=0", "reset:start=2",
                                  "reset:every=2:fraction=0.5", "reset:fraction=1.5",
                                  "reset:every", "reset:often=2"])
def test_bad_specs_are_rejected(spec: str) -> None:
    with pytest.raises((ValueError, ValidationError)):
        FaultRule.parse(spec)


def test_every_kind_is_documented() -> None:
    for kind in FAULT_KINDS:
        assert FaultRule.parse(kind).kind == kind
