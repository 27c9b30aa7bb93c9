"""The ``openai`` SDK's view of an engine: functional checks before measuring
(:func:`run_checks`: a chat with a known answer, thinking on and off with reasoning kept
apart — or not supported, by the chat template :func:`read_chat_template` finds — and a
streamed tool-call round trip) and what an application sees of a scenario
(:func:`sdk_view`), beside the wire-accurate figures."""

from benchlib.checks._functional import NOT_SUPPORTED, WEATHER_TOOL, CheckResult, run_checks
from benchlib.checks._sdk import SdkView, sdk_view
from benchlib.checks._template import read_chat_template, thinking_switch

__all__ = ["NOT_SUPPORTED", "WEATHER_TOOL", "CheckResult", "SdkView", "read_chat_template",
           "run_checks", "sdk_view", "thinking_switch"]
