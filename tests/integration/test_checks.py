"""02_launch's functional checks through the ``openai`` SDK, against the scripted server as
an instrument with known behaviour: a chat answers; reasoning streamed apart is counted apart
from the content, and reasoning that comes with thinking off is caught (the scripted server
ignores ``chat_template_kwargs``, as an engine with a template that does would not); a server
that never calls tools fails the round trip with what to do. A real engine's checks run in the
vLLM e2e tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchlib.checks import run_checks
from benchlib.recipe import FunctionalChecks


def test_a_chat_through_the_sdk(scripted: Callable[..., Any]) -> None:
    server = scripted("--ttft-ms", "2", "--itl-ms", "1")
    [chat] = run_checks(server.url, "scripted", FunctionalChecks())
    assert chat.name == "chat" and chat.ok and chat.content_chars > 0, chat
    assert chat.reasoning_chars == 0 and chat.finish_reason in ("length", "stop")


def test_reasoning_is_kept_apart_and_thinking_off_is_held_to_it(
        scripted: Callable[..., Any]) -> None:
    for field in ("reasoning_content", "reasoning"):
        server = scripted("--ttft-ms", "2", "--itl-ms", "1",
                          "--reasoning-tokens", "4", "--reasoning-field", field)
        checks = run_checks(server.url, "scripted", FunctionalChecks(chat=False,
                                                                     thinking=True))
        off, on = checks
        assert (off.name, on.name) == ("thinking_off", "thinking_on")
        assert on.ok and on.reasoning_chars > 0 and on.content_chars > 0, on
        assert not off.ok and "ignores chat_template_kwargs" in off.note, off


def test_a_server_that_never_calls_tools_fails_the_round_trip(
        scripted: Callable[..., Any]) -> None:
    server = scripted("--ttft-ms", "2", "--itl-ms", "1")
    [tool] = run_checks(server.url, "scripted", FunctionalChecks(chat=False, tool_call=True))
    assert not tool.ok and tool.tool_calls == [] and "tool-call parser" in tool.note


def test_a_server_that_is_gone_is_an_error_not_a_crash() -> None:
    from benchlib.engines import free_port

    [chat] = run_checks(f"http://127.0.0.1:{free_port()}", "m", FunctionalChecks(),
                        timeout_s=5)
    assert not chat.ok and chat.error and "Connection" in chat.error
