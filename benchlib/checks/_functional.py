"""Functional checks through the ``openai`` SDK — the client the seeds' own scripts use —
before anything is measured: does the engine answer a chat with a known answer, keep
reasoning apart from the content with thinking on and off, and complete a streamed tool-call
round trip (seed 001's ``get_weather``)?

Each check streams as an application would (``client.chat.completions.create(stream=True)``),
collects ``delta.content`` and the reasoning the engine sends apart (``delta.reasoning`` or
``delta.reasoning_content``, whichever the engine names it) separately, and accumulates
tool-call deltas by index, as seed 001's script does. A check records what it saw (the chat's
answer itself, for the report) and, where it fails, what to do (a reasoning parser, a
tool-call parser, ``tool_choice: required``); it never stops the run: the measurement still
says how fast, the check says whether it works.

Nothing passes on noise: the chat asks a question whose answer the check knows
(``checks.chat_expect``), so random weights, or a template or tokenizer that does not match
the model, fail it with the answer shown; thinking is "not supported by this model" when the
chat template has no thinking switch and no reasoning came back
(:mod:`benchlib.checks._template`), never "ok".
"""

from __future__ import annotations

import json
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import BaseModel, Field, model_validator

from benchlib.checks._delta import reasoning_text
from benchlib.checks._template import THINKING_SWITCH, thinking_switch
from benchlib.recipe import FunctionalChecks

__all__ = ["ANSWER_CHARS", "NOT_SUPPORTED", "WEATHER_TOOL", "CheckResult", "run_checks"]

#: seed 001's tool, as the cookbook defines it
WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get current weather information for a location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                         "description": "Temperature unit"}},
            "required": ["location"]}}}
_WEATHER_ANSWER = {"location": "Beijing", "temperature": 22, "unit": "celsius",
                   "description": "Sunny"}
_THINK = "What is 17 + 25? Answer with the number."
_TOOL = "What's the weather like in Beijing?"
#: a check's status when the model cannot do what it asks (not a failure of the engine)
NOT_SUPPORTED: Final = "not supported by this model"
#: characters of a check's answer kept for the report
ANSWER_CHARS = 300
Status = Literal["ok", "not ok", "not supported by this model"]


class CheckResult(BaseModel):
    """What one functional check saw."""

    name: str = Field(description="chat, thinking_off, thinking_on or tool_call")
    ok: bool = Field(description="the engine did what the check asks (status ok)")
    status: Status = Field("ok", description="ok; not ok (the note says what to do); or not "
                           "supported by this model (thinking, when the chat template has "
                           "no thinking switch and no reasoning came back)")
    answer: str = Field("", description=f"the content streamed (its first {ANSWER_CHARS} "
                                        "characters): what the model said")
    seconds: float = Field(description="wall time of the check's requests")
    content_chars: int = Field(0, description="characters of content streamed")
    reasoning_chars: int = Field(0, description="characters of reasoning streamed apart "
                                                "from the content")
    finish_reason: str | None = Field(None, description="the last finish_reason seen")
    tool_calls: list[dict[str, Any]] = Field(
        default_factory=list, description="tool calls assembled from the stream: name and "
                                          "arguments (JSON text as streamed)")
    answer_chars: int | None = Field(None, description="tool_call: characters of the answer "
                                                       "after the tool's result was sent back")
    note: str = Field("", description="what the result means, and what to do when not ok")
    error: str | None = Field(None, description="the SDK's error, if a request failed")

    @model_validator(mode="after")
    def _agree(self) -> CheckResult:
        """``ok`` and ``status`` say one thing (a record without a status takes ``ok``'s)."""
        if self.status == "ok" and not self.ok:
            self.status = "not ok"
        if self.status != "ok":
            self.ok = False
        return self


@dataclass
class _Stream:
    content: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)


def _stream(client: Any, model: str, messages: list[dict[str, Any]], max_tokens: int,
            **kwargs: Any) -> _Stream:
    out = _Stream()
    response = client.chat.completions.create(model=model, messages=messages, stream=True,
                                              max_tokens=max_tokens, temperature=0, **kwargs)
    for chunk in response:
        for choice in chunk.choices or []:
            delta = choice.delta
            if delta is not None:
                out.content += delta.content or ""
                out.reasoning += reasoning_text(delta)
                for call in delta.tool_calls or []:
                    acc = out.calls.setdefault(call.index, {"id": None, "name": "",
                                                            "arguments": ""})
                    acc["id"] = call.id or acc["id"]
                    if call.function is not None:
                        acc["name"] += call.function.name or ""
                        acc["arguments"] += call.function.arguments or ""
            out.finish_reason = choice.finish_reason or out.finish_reason
    return out


def _timed(name: str, fn: Any) -> CheckResult:
    import openai

    start = time.perf_counter()
    try:
        result: CheckResult = fn()
    except openai.OpenAIError as exc:
        return CheckResult(name=name, ok=False, seconds=time.perf_counter() - start,
                           error=f"{type(exc).__name__}: {exc}"[:500],
                           note="the request failed through the SDK")
    return result.model_copy(update={"seconds": time.perf_counter() - start})


def _chat(client: Any, model: str, spec: FunctionalChecks) -> CheckResult:
    s = _stream(client, model, [{"role": "user", "content": spec.chat_prompt}],
                spec.max_tokens)
    expect = spec.chat_expect
    if not (s.content or s.reasoning):
        ok, note = False, "the stream carried no text"
    elif expect is None:
        ok, note = True, "answered (checks.chat_expect is null: any text passes)"
    elif expect.casefold() in (s.content + s.reasoning).casefold():
        ok, note = True, f"answered with {expect!r}"
    else:
        ok, note = False, (f"answered without {expect!r}: random weights, a chat template "
                           "or tokenizer that does not match the model, or a model that does "
                           "not know (the answer is shown)")
    return CheckResult(name="chat", ok=ok, seconds=0, content_chars=len(s.content),
                       reasoning_chars=len(s.reasoning), finish_reason=s.finish_reason,
                       answer=s.content[:ANSWER_CHARS], note=note)


def _thinking(client: Any, model: str, spec: FunctionalChecks, on: bool,
              template: str | None) -> CheckResult:
    """Thinking ``on`` or off. ``template``: the chat template the engine applies (None:
    unknown): without a thinking switch and with no reasoning back, the model does not
    think — "not supported by this model", whichever way the switch was sent."""
    s = _stream(client, model, [{"role": "user", "content": _THINK}], spec.max_tokens,
                extra_body={"chat_template_kwargs": {THINKING_SWITCH: on}})
    name = f"thinking_{'on' if on else 'off'}"
    switch = thinking_switch(template)
    status: Status
    if not s.reasoning and switch is False:
        status, note = NOT_SUPPORTED, (
            f"the chat template has no thinking switch (it never reads {THINKING_SWITCH}) "
            "and no reasoning came back: this model does not think")
    elif on and s.reasoning:
        status, note = "ok", "reasoning came apart from the content"
    elif on:
        status, note = "not ok", (
            "no reasoning came apart from the content: start the engine with a reasoning "
            "parser (vLLM and SGLang --reasoning-parser …) if the model thinks" + (
                "" if switch else "; the chat template was not found, so whether it can "
                                  "think is not known"))
    elif s.reasoning:
        status, note = "not ok", ("reasoning with thinking off: the chat template ignores "
                                  f"chat_template_kwargs.{THINKING_SWITCH}")
    else:
        status, note = "ok", "thinking off: no reasoning"
    return CheckResult(name=name, ok=status == "ok", status=status, seconds=0,
                       content_chars=len(s.content), reasoning_chars=len(s.reasoning),
                       finish_reason=s.finish_reason, answer=s.content[:ANSWER_CHARS],
                       note=note)


def _tool_call(client: Any, model: str, spec: FunctionalChecks) -> CheckResult:
    messages: list[dict[str, Any]] = [{"role": "user", "content": _TOOL}]
    s = _stream(client, model, messages, spec.max_tokens, tools=[WEATHER_TOOL],
                tool_choice=spec.tool_choice)
    calls = [{"name": c["name"], "arguments": c["arguments"]} for _, c in sorted(s.calls.items())]
    base = CheckResult(name="tool_call", ok=False, seconds=0, content_chars=len(s.content),
                       reasoning_chars=len(s.reasoning), finish_reason=s.finish_reason,
                       tool_calls=calls)
    if not calls:
        return base.model_copy(update={"note": (
            "answered without calling get_weather: start the engine with a tool-call parser "
            "(vLLM --enable-auto-tool-choice --tool-call-parser …, SGLang --tool-call-parser "
            "…), or set checks.tool_choice: required")})
    first = s.calls[min(s.calls)]
    required = WEATHER_TOOL["function"]["parameters"]["required"]
    try:
        args = json.loads(first["arguments"] or "{}")
    except ValueError:
        args = None
    valid = isinstance(args, dict) and all(k in args for k in required)
    call_id = first["id"] or "call_0"
    messages += [{"role": "assistant", "content": None, "tool_calls": [{
                      "id": call_id, "type": "function",
                      "function": {"name": first["name"], "arguments": first["arguments"]}}]},
                 {"role": "tool", "tool_call_id": call_id,
                  "content": json.dumps(_WEATHER_ANSWER)}]
    answer = _stream(client, model, messages, spec.max_tokens, tools=[WEATHER_TOOL])
    text = answer.content + answer.reasoning
    ok = first["name"] == "get_weather" and valid and bool(text)
    if first["name"] != "get_weather":
        note = f"called {first['name']!r}, not get_weather"
    elif not valid:
        note = (f"get_weather's arguments are not a JSON object with {', '.join(required)} "
                f"(a model that cannot call tools, or a tool-call parser that does not match "
                f"the model); the result was sent back {'and answered' if text else 'unanswered'}")
    elif not text:
        note = "no answer after the tool's result was sent back"
    else:
        note = "round trip: get_weather called with its arguments, its result sent back, answered"
    return base.model_copy(update={"ok": ok, "status": "ok" if ok else "not ok",
                                   "answer_chars": len(text), "note": note})


def run_checks(base_url: str, model: str, spec: FunctionalChecks,
               api_key: str | None = None, timeout_s: float = 120.0,
               verify: ssl.SSLContext | bool = True,
               chat_template: str | None = None) -> list[CheckResult]:
    """The checks ``spec`` asks for, against the OpenAI-compatible server at ``base_url``
    (no ``/v1``), in order: chat, thinking off and on, the tool-call round trip. ``verify``:
    an https server's TLS context (the recipe's CA bundle), else the system's CAs.
    ``chat_template``: the template the engine applies
    (:func:`~benchlib.checks.read_chat_template`; None: unknown), which says whether the
    model has a thinking switch at all."""
    import openai

    client = openai.OpenAI(base_url=base_url.rstrip("/") + "/v1", api_key=api_key or "EMPTY",
                           timeout=timeout_s, max_retries=0,
                           http_client=openai.DefaultHttpxClient(verify=verify))
    out = []
    if spec.chat:
        out.append(_timed("chat", lambda: _chat(client, model, spec)))
    if spec.thinking:
        out.append(_timed("thinking_off", lambda: _thinking(client, model, spec, False,
                                                                  chat_template)))
        out.append(_timed("thinking_on", lambda: _thinking(client, model, spec, True,
                                                                 chat_template)))
    if spec.tool_call:
        out.append(_timed("tool_call", lambda: _tool_call(client, model, spec)))
    client.close()
    return out
