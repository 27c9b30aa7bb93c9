"""What the scripted server knows of a request's prompt: its digest, its length, and (with
``prefix_cache``) how much of it an earlier prompt began with, reported as llama.cpp reports
its prompt cache (``timings.cache_n`` beside ``prompt_n``) so that clients reading
per-response cache hits can be tested against a known answer."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["PrefixCache", "prompt_chars", "prompt_digest", "prompt_text"]


def prompt_digest(payload: dict[str, Any]) -> str:
    """SHA-256 of the request's prompt (a completions prompt, or the chat messages as
    canonical JSON): which requests sent the same prompt, without writing any prompt down."""
    prompt = payload.get("prompt", payload.get("messages"))
    return hashlib.sha256(json.dumps(prompt, sort_keys=True, ensure_ascii=False)
                          .encode()).hexdigest()


def prompt_chars(payload: dict[str, Any]) -> int:
    """Characters of the prompt's text: a completions prompt, or the text of every chat
    message (a string, or OpenAI content parts), however the client shaped the messages."""
    prompt = payload.get("prompt")
    if isinstance(prompt, str):
        return len(prompt)
    chars = 0
    for m in payload.get("messages") or ():
        content = m.get("content", "") if isinstance(m, dict) else ""
        if isinstance(content, list):
            chars += sum(len(str(p.get("text", ""))) for p in content if isinstance(p, dict))
        else:
            chars += len(str(content))
    return chars


def prompt_text(payload: dict[str, Any]) -> str:
    """The prompt as one string: a completions prompt, or each chat message's role and text."""
    prompt = payload.get("prompt")
    if isinstance(prompt, str):
        return prompt
    parts = []
    for m in payload.get("messages") or ():
        if isinstance(m, dict):
            content = m.get("content", "")
            if isinstance(content, list):
                content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            parts.append(f"<{m.get('role', '')}>{content}")
    return "".join(parts)


def _shared(a: str, b: str) -> int:
    """Characters at the start of ``a`` and ``b`` that are equal."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class PrefixCache:
    """Every prompt seen so far; a new one's cached part is the longest prefix it shares with
    any of them, in tokens of 4 characters (the server's usage counts the same way)."""

    def __init__(self) -> None:
        self._seen: list[str] = []

    def timings(self, payload: dict[str, Any]) -> dict[str, int]:
        """llama.cpp's ``cache_n`` and ``prompt_n`` for this prompt, which is then cached."""
        text = prompt_text(payload)
        shared = max((_shared(text, s) for s in self._seen), default=0)
        self._seen.append(text)
        total = prompt_chars(payload) // 4 + 1
        cached = min(total, shared // 4)
        return {"cache_n": cached, "prompt_n": total - cached}
