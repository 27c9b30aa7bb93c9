"""02_launch's functional checks through the ``openai`` SDK, against the scripted server as
an instrument with known behaviour: a chat is held to its known answer, with the answer kept;
thinking is "not supported by this model" when the template has no switch; reasoning streamed apart is counted apart
from the content, and reasoning that comes with thinking off is caught (the scripted server
ignores ``chat_template_kwargs``, as an engine with a template that does would not); a server
that never calls tools fails the round trip with what to do. A real engine's checks run in the
vLLM e2e tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchlib.checks import NOT_SUPPORTED, run_checks
from benchlib.recipe import FunctionalChecks


def test_a_chat_through_the_sdk_is_held_to_its_known_answer(
        scripted: Callable[..., Any]) -> None:
    """The scripted server's words are no answer to "the capital of France": the check
    shows them and fails; asked for the words it does say, or for any text, it passes."""
    server = scripted("--ttft-ms", "2", "--itl-ms", "1")
    [chat] = run_checks(server.url, "scripted", FunctionalChecks())
    assert chat.name == "chat" and not chat.ok and chat.status == "not ok", chat
    assert chat.answer and len(chat.answer) == min(chat.content_chars, 300), chat
    assert "without 'Paris'" in chat.note and chat.finish_reason in ("length", "stop")
    word = chat.answer.split()[0]
    [said] = run_checks(server.url, "scripted", FunctionalChecks(chat_expect=word.upper()))
    assert said.ok and said.status == "ok" and said.answer == chat.answer, said
    [anything] = run_checks(server.url, "scripted", FunctionalChecks(chat_expect=None))
    assert anything.ok and anything.reasoning_chars == 0, anything


def test_thinking_without_a_switch_is_not_supported_and_never_ok(
        scripted: Callable[..., Any]) -> None:
    """No reasoning back: with a template that has no thinking switch the model does not
    think ("not supported by this model", both ways); with a switch, or an unknown
    template, thinking on is not ok (a reasoning parser is missing, or may be)."""
    server = scripted("--ttft-ms", "2", "--itl-ms", "1")
    spec = FunctionalChecks(chat=False, thinking=True)
    plain = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    off, on = run_checks(server.url, "scripted", spec, chat_template=plain)
    assert off.status == on.status == NOT_SUPPORTED and not (off.ok or on.ok), (off, on)
    assert "no thinking switch" in on.note and on.answer, on
    switch = "{% if enable_thinking %}<think>{% endif %}" + plain
    off, on = run_checks(server.url, "scripted", spec, chat_template=switch)
    assert off.ok and on.status == "not ok" and "reasoning parser" in on.note, (off, on)
    off, on = run_checks(server.url, "scripted", spec)
    assert off.ok and on.status == "not ok" and "not known" in on.note, (off, on)


def test_reasoning_is_kept_apart_and_thinking_off_is_held_to_it(
        scripted: Callable[..., Any]) -> None:
    for field in ("reasoning_content", "reasoning"):
        server = scripted("--ttft-ms", "2", "--itl-ms", "1",
                          "--reasoning-tokens", "4", "--reasoning-field", field)
        # reasoning came back: the model thinks, whatever its template says
        checks = run_checks(server.url, "scripted", FunctionalChecks(chat=False,
                                                                     thinking=True),
                            chat_template="no switch here")
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
