"""Whether a request body fits the engine's context, its prompt counted as the engine counts it.

What: :class:`ContextFit` reads each body ``benchlib run --check`` built (measured requests and
warmups alike) and counts its prompt the way the server will: a chat rendered through the chat
template the engine applies (its ``--chat-template`` flag, else the tokenizer's, with the
generation prompt) and encoded without special tokens, as vLLM and SGLang do; a completion's
text encoded with the tokenizer's special tokens (its BOS); token ids as sent. A prompt that
fills the context by itself leaves no token to generate, and every engine refuses it; a prompt
and its ``max_tokens`` past the context are refused too (vLLM, llama.cpp's slot), and SGLang
refuses them already when they reach it (``refuses_at_context``). Each such body raises a
:class:`~benchlib.UsageError` naming the field, with the tokens the template or BOS added.

Why: the kit's prompts are cut to their own token counts; the server adds a template (13
tokens for the tiny model's, hundreds for a long system prompt) or a BOS, and a recipe that
fits by its own count is then refused request after request, after the engine's start.
"""

from __future__ import annotations

import json
from typing import Any

from benchlib._exceptions import UsageError

__all__ = ["ContextFit"]


def _text(content: object) -> str:
    """A message's text: its string, or its text parts (a multimodal list)."""
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    return "" if content is None else str(content)


class ContextFit:
    """Each body's prompt as the engine counts it, held to its context (module doc)."""

    def __init__(self, tok: Any | None, context: int | None, *,
                 refuses_at_context: bool = False, template: str | None = None) -> None:
        self.tok: Any = tok
        self.context = context
        self.at_context = refuses_at_context
        self.template = template
        self.seen: dict[bytes, tuple[int, int, int]] = {}

    def _chat(self, messages: list[dict[str, object]]) -> int | None:
        """The chat's tokens through the engine's template; None without a template."""
        template = self.template or getattr(self.tok, "chat_template", None)
        if not template:
            return None
        try:
            rendered = self.tok.apply_chat_template(messages, chat_template=template,
                                                    add_generation_prompt=True, tokenize=False)
        except Exception as exc:  # jinja's TemplateError, a role the template refuses …
            raise UsageError("--endpoint", f"the chat template the engine applies cannot "
                             f"render this request ({type(exc).__name__}: {exc}): the engine "
                             "would refuse every chat request; fix the template "
                             "(engine.args --chat-template) or use endpoint: completions"
                             ) from None
        return len(self.tok.encode(rendered, add_special_tokens=False))

    def served(self, body: bytes) -> tuple[int, int, int]:
        """(prompt tokens the engine counts, the prompt's own tokens, tokens to generate)."""
        if body not in self.seen:
            req = json.loads(body)
            out = int(req.get("max_completion_tokens") or req.get("max_tokens") or 0)
            if "messages" in req:
                text = "\n".join(_text(m.get("content")) for m in req["messages"])
                own = len(self.tok.encode(text, add_special_tokens=False))
                served = self._chat(req["messages"])
                served = own if served is None else served
            elif isinstance(req["prompt"], list):  # token ids: sent as they are
                own = served = len(req["prompt"])
            else:
                own = len(self.tok.encode(req["prompt"], add_special_tokens=False))
                served = len(self.tok.encode(req["prompt"]))
            self.seen[body] = (served, own, out)
        return self.seen[body]

    @staticmethod
    def _how(served: int, own: int) -> str:
        return (f" as the engine counts it ({own} of its own, {served - own} its chat template "
                "or BOS adds)") if served != own else ""

    def check(self, bodies: list[bytes], field: str, what: str) -> None:
        """Raise unless every body's prompt (as served) and its output fit the context."""
        if self.context is None or self.tok is None or not bodies:
            return
        ctx = self.context
        counted = [self.served(b) for b in bodies]
        served, own, _ = max(counted, key=lambda c: c[0])
        if served >= ctx:
            verb = "passes" if served > ctx else "fills"
            raise UsageError(field, f"{what} of {served} tokens{self._how(served, own)} "
                             f"{verb} the engine's max_model_len {ctx} by itself: it would "
                             "refuse such a request (no token left to generate); lower "
                             "input_len, or raise engine.max_model_len")
        served, own, out = max(counted, key=lambda c: c[0] + c[2])
        if served + out > ctx or (self.at_context and served + out == ctx):
            verb = "pass" if served + out > ctx else "reach"
            raise UsageError("--output-len" if field == "--input-len" else field,
                             f"{what} of {served} tokens{self._how(served, own)} and {out} to "
                             f"generate {verb} the engine's max_model_len {ctx}: it would "
                             "refuse such a request; lower input_len or output_len, or raise "
                             "engine.max_model_len")
