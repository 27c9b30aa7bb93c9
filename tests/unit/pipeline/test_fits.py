"""A request body against the engine's context, its prompt counted as the engine counts it
(pipeline._fits): the chat template the engine applies, the BOS, ids as sent; a prompt that
fills the context; SGLang's refusal at the context itself; a template that cannot render."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchlib._exceptions import UsageError
from benchlib.pipeline._fits import ContextFit


def _chat(text: str, out: int = 16) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": text}],
                       "max_tokens": out}).encode()


def _counts(tokenizer: Any, body: bytes, **kw: Any) -> tuple[int, int, int]:
    return ContextFit(tokenizer, 10_000, **kw).served(body)


def test_a_chat_goes_through_the_engines_own_template(tokenizer: Any) -> None:
    """The engine's --chat-template, not the tokenizer's, is what it applies: a template with
    a long system preamble adds its tokens."""
    served, own, out = _counts(tokenizer, _chat("alpha bravo charlie"))
    assert served > own and out == 16
    long = ("{{ 'You are a careful assistant who answers briefly and well. ' * 10 }}"
            "{% for m in messages %}{{ m['content'] }}{% endfor %}")
    preamble, own2, _ = _counts(tokenizer, _chat("alpha bravo charlie"), template=long)
    assert own2 == own and preamble > served + 50


def test_text_parts_ids_and_the_bos(tokenizer: Any) -> None:
    parts = json.dumps({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "alpha bravo"}, {"type": "image_url", "image_url": {}}]}],
        "max_tokens": 4}).encode()
    plain = "{% for m in messages %}{% for p in m['content'] %}{{ p.get('text', '') }}" \
        "{% endfor %}{% endfor %}"
    _, own, _ = _counts(tokenizer, parts, template=plain)
    assert own == len(tokenizer.encode("alpha bravo", add_special_tokens=False))
    ids = json.dumps({"prompt": [5, 6, 7], "max_tokens": 2}).encode()
    assert _counts(tokenizer, ids) == (3, 3, 2)
    text = json.dumps({"prompt": "alpha bravo", "max_completion_tokens": 9}).encode()
    served, own, out = _counts(tokenizer, text)
    assert served == own + 1 and out == 9  # the tiny Llama tokenizer's BOS


def test_a_prompt_that_fills_the_context_leaves_nothing_to_generate(tokenizer: Any) -> None:
    body = json.dumps({"prompt": list(range(100)), "max_tokens": 0}).encode()
    with pytest.raises(UsageError, match="fills the engine's max_model_len 100 by itself"):
        ContextFit(tokenizer, 100).check([body], "--input-len", "a prompt")
    ContextFit(tokenizer, 101).check([body], "--input-len", "a prompt")


def test_sglang_refuses_a_request_that_reaches_its_context(tokenizer: Any) -> None:
    """vLLM serves a prompt and its max_tokens that sum to max_model_len; SGLang refuses
    them (input + max_new_tokens >= context_len)."""
    body = json.dumps({"prompt": list(range(90)), "max_tokens": 10}).encode()
    ContextFit(tokenizer, 100).check([body], "--input-len", "a prompt")
    with pytest.raises(UsageError, match="and 10 to generate reach the engine's max_model_len"
                       ) as err:
        ContextFit(tokenizer, 100, refuses_at_context=True).check([body], "--input-len",
                                                                 "a prompt")
    assert err.value.field == "--output-len"


def test_a_template_that_cannot_render_is_named(tokenizer: Any) -> None:
    raising = "{{ raise_exception('only user and assistant roles are supported') }}"
    with pytest.raises(UsageError, match="cannot render this request") as err:
        ContextFit(tokenizer, 1000, template=raising).check([_chat("hi")], "--input-len",
                                                            "a prompt")
    assert err.value.field == "--endpoint" and "only user and assistant" in err.value.message
