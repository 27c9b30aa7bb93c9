"""A check's ``ok`` and ``status`` say one thing, on every path: a tool-call round trip that
succeeds is ok (its result starts as not ok and is updated), a record without a status takes
``ok``'s, and "not supported by this model" is never ok."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from benchlib.checks import NOT_SUPPORTED, CheckResult
from benchlib.checks._functional import _tool_call
from benchlib.recipe import FunctionalChecks


def _chunk(**delta: Any) -> SimpleNamespace:
    fields = {"content": None, "tool_calls": None, **delta}
    return SimpleNamespace(choices=[SimpleNamespace(delta=SimpleNamespace(**fields),
                                                    finish_reason=None)])


class _Client:
    """The SDK's streaming surface, answering a tool call first and then in words."""

    def __init__(self) -> None:
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))
        self.calls = 0

    def _create(self, **_: Any) -> list[SimpleNamespace]:
        self.calls += 1
        if self.calls == 1:
            fn = SimpleNamespace(name="get_weather", arguments=json.dumps({"location": "B"}))
            return [_chunk(tool_calls=[SimpleNamespace(index=0, id="c1", function=fn)])]
        return [_chunk(content="Sunny, 22 degrees.")]


def test_a_round_trip_that_works_is_ok_in_both_fields() -> None:
    result = _tool_call(_Client(), "m", FunctionalChecks(tool_call=True))
    assert (result.ok, result.status) == (True, "ok"), result
    assert result.answer_chars == len("Sunny, 22 degrees.")


def test_status_and_ok_agree() -> None:
    assert CheckResult(name="chat", ok=False, seconds=0).status == "not ok"
    assert CheckResult(name="chat", ok=True, seconds=0).status == "ok"
    odd = CheckResult(name="thinking_on", ok=True, status=NOT_SUPPORTED, seconds=0)
    assert odd.ok is False
