"""The ``openai`` SDK's view of an engine: functional checks before measuring
(:func:`run_checks`: a chat, thinking on and off with reasoning kept apart, a streamed
tool-call round trip) and what an application sees of a scenario (:func:`sdk_view`), beside
the wire-accurate figures."""

from benchlib.checks._functional import WEATHER_TOOL, CheckResult, run_checks
from benchlib.checks._sdk import SdkView, sdk_view

__all__ = ["WEATHER_TOOL", "CheckResult", "SdkView", "run_checks", "sdk_view"]
