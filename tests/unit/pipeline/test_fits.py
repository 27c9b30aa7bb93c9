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


def _ids(n: int, out: int | None) -> bytes:
    return json.dumps({"prompt": list(range(n))} | ({"max_tokens": out} if out else {})
                      ).encode()


def test_the_longest_prompt_with_its_output_is_the_one_held(tokenizer: Any) -> None:
    """A short prompt with a long output can pass the context where the longest prompt does
    not: prompt and output are summed per request, not maximised apart."""
    bodies = [_ids(10, 100), _ids(40, 5)]
    with pytest.raises(UsageError) as err:
        ContextFit(tokenizer, 100).check(bodies, "--input-len", "a prompt")
    assert err.value.field == "--output-len"
    assert err.value.message == (
        "a prompt of 10 tokens and 100 to generate pass the engine's max_model_len 100: it "
        "would refuse such a request; lower input_len or output_len, or raise "
        "engine.max_model_len")  # ids as sent: nothing added, so no "as the engine counts it"
    with pytest.raises(UsageError) as alone:
        ContextFit(tokenizer, 40).check(bodies, "--input-len", "a prompt")
    assert alone.value.message == (
        "a prompt of 40 tokens fills the engine's max_model_len 40 by itself: it would refuse "
        "such a request (no token left to generate); lower input_len, or raise "
        "engine.max_model_len")


def test_a_warmup_past_the_context_names_its_own_field(tokenizer: Any) -> None:
    """A prompt file's warmups are its later lines: one past the context with its output is
    the warmups' count to lower, not the output length."""
    with pytest.raises(UsageError) as err:
        ContextFit(tokenizer, 50).check([_ids(30, 30)], "--num-warmups", "a warmup's prompt")
    assert err.value.field == "--num-warmups"


def test_a_body_without_max_tokens_leaves_the_length_to_the_engine(tokenizer: Any) -> None:
    """No length key: nothing to generate is counted, so a prompt one token under SGLang's
    context is not refused for an output it never asked for."""
    assert ContextFit(tokenizer, 100).served(_ids(99, None)) == (99, 99, 0)
    ContextFit(tokenizer, 100, refuses_at_context=True).check([_ids(99, None)], "--input-len",
                                                              "a prompt")


def test_every_message_and_text_part_is_counted_without_a_template(tokenizer: Any) -> None:
    """Without a template (a base model's tokenizer) the prompt is its messages' text, one
    after another as the engines join them; a text part without text, or a message without
    content (a tool call's), adds nothing."""
    messages = [{"role": "system", "content": "alpha bravo"},
                {"role": "user", "content": [{"type": "text", "text": "charlie"},
                                             {"type": "text"},
                                             {"type": "text", "text": "delta"}]},
                {"role": "assistant", "content": None}]
    body = json.dumps({"messages": messages, "max_tokens": 3}).encode()
    bare = tokenizer.chat_template
    tokenizer.chat_template = None
    try:
        served, own, out = ContextFit(tokenizer, 10_000).served(body)
    finally:
        tokenizer.chat_template = bare
    expected = len(tokenizer.encode("alpha bravo\ncharlie\n\ndelta\n",
                                    add_special_tokens=False))
    assert (served, own, out) == (expected, expected, 3)


def test_a_template_that_cannot_render_says_what_to_do(tokenizer: Any) -> None:
    raising = "{{ raise_exception('no system role') }}"
    with pytest.raises(UsageError) as err:
        ContextFit(tokenizer, 1000, template=raising).check([_chat("hi")], "--input-len",
                                                            "a prompt")
    assert err.value.message.startswith(
        "the chat template the engine applies cannot render this request (TemplateError: ")
    assert err.value.message.endswith(
        "): the engine would refuse every chat request; fix the template (engine.args "
        "--chat-template) or use endpoint: completions")


def test_the_tokens_a_template_adds_are_counted_per_request(tokenizer: Any) -> None:
    """A template may add tokens to some requests only (here a preamble before long
    messages): the request held to the context is the one whose prompt as served plus its
    output is longest, not the one whose own prompt plus output is."""
    template = ("{% for m in messages %}{% if m['content'] | length > 10 %}"
                "{{ 'pad ' * 80 }}{% endif %}{{ m['content'] }}{% endfor %}")
    short, long = _chat("hi", out=60), _chat("hello there friend", out=5)
    probe = ContextFit(tokenizer, 10_000, template=template)
    (sa, oa, xa), (sb, ob, xb) = probe.served(short), probe.served(long)
    assert sb + xb > sa + xa and oa + xa > ob + xb  # the premise: the two orders disagree
    ctx = sb + xb - 1
    assert sa + xa <= ctx and sb < ctx
    with pytest.raises(UsageError, match=f"a prompt of {sb} tokens as the engine counts it "
                       rf"\({ob} of its own, {sb - ob} its chat template or BOS adds\) and "
                       f"{xb} to generate pass"):
        ContextFit(tokenizer, ctx, template=template).check([short, long], "--input-len",
                                                            "a prompt")
