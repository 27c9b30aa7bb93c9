"""What the scripted server says: its tokens' text and the bodies that carry them — a streamed
chunk's choice (reasoning first, then content; a completion's text) and a whole response —
as the OpenAI API shapes them, from the script (:class:`ScriptConfig`)."""

from __future__ import annotations

from typing import Any

from benchlib.scripted._config import ScriptConfig

__all__ = ["choice_body", "token_text", "whole_body"]

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


def token_text(i: int) -> str:
    """The text of token ``i``: one word with its space."""
    return " " + _WORDS[i % len(_WORDS)]


def _huge_text(size: int) -> str:
    """``size`` characters of words: tokenizers stay linear on it (one endless "word" would
    not)."""
    unit = "".join(token_text(i) for i in range(len(_WORDS)))
    return (unit * (size // len(unit) + 1))[:size]


def choice_body(cfg: ScriptConfig, texts: list[str], a: int, b: int, chat: bool, huge: bool
                ) -> dict[str, Any]:
    """The choice carrying tokens ``a`` to ``b`` (reasoning first, then content)."""
    last = b == len(texts)
    reasoning = "".join(texts[i] for i in range(a, min(b, cfg.reasoning_tokens)))
    content = "".join(texts[i] for i in range(max(a, cfg.reasoning_tokens), b))
    if huge:
        content += _huge_text(cfg.huge_chunk_bytes)
    if not chat:
        return {"index": 0, "text": reasoning + content,
                "finish_reason": "length" if last else None}
    delta: dict[str, Any] = {}
    if reasoning:
        delta[cfg.reasoning_field] = reasoning
    if content:
        delta["content"] = content
    return {"index": 0, "delta": delta, "finish_reason": "length" if last else None}


def whole_body(cfg: ScriptConfig, rid: str, chat: bool, texts: list[str]) -> dict[str, Any]:
    """A whole (not streamed) response of ``texts``."""
    text = "".join(texts)
    choice: dict[str, Any] = (
        {"index": 0, "message": {"role": "assistant", "content": text},
         "finish_reason": "length"} if chat
        else {"index": 0, "text": text, "finish_reason": "length"})
    return {"id": rid, "object": "chat.completion" if chat else "text_completion",
            "model": cfg.model, "choices": [choice],
            "usage": {"prompt_tokens": 0, "completion_tokens": len(texts),
                      "total_tokens": len(texts)}}
