"""The ``text`` dataset: real prose, cut to exactly the drawn number of tokens.

What: :func:`text_prompts` draws each prompt's input and output length as ``random`` does
(vLLM's or SGLang's ranges, the same seed giving the same lengths), then writes a request a
person could send: one of :data:`INSTRUCTIONS`, a blank line, and running text from the
kit's corpus (:mod:`._corpus`: section titles and paragraphs, from a seeded passage on,
wrapping round at the end), cut so that the whole encodes to exactly that many tokens with
the model's tokenizer. A length too short for the instruction gets the text alone.

Why: random token ids are what ``vllm bench serve --dataset-name random`` sends and what
people compare, so that dataset stays; but a model that reads them produces noise, and
speculative decoding, prefix caching and a real model's answers behave differently on
language. SGLang's ``random`` dataset fills its lengths with real text (ShareGPT's) for the
same reason; this one does it offline, from text shipped with its licence.

Exactness: decoding a prefix of the encoded text and encoding it again can merge or split a
token at the cut; the cut is moved by the difference until the text encodes to the length
(a few rounds), and a start that cannot be cut exactly moves to the next passage.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchlib._exceptions import UsageError
from benchlib.measure.wire._request import Prompt
from benchlib.measure.workload._corpus import Corpus, Passage, load_corpus
from benchlib.measure.workload._datasets import RangeMode, draw_lengths

__all__ = ["INSTRUCTIONS", "text_prompts"]

#: what each prompt asks of the passage that follows it (one drawn per prompt)
INSTRUCTIONS = (
    "Summarize the following passage from the Python documentation in a few sentences.",
    "Explain the following passage to someone who is new to Python, with a short example.",
    "List the main points of the following passage.",
    "Write three questions that the following passage answers, each with its answer.",
    "Rewrite the following passage in plain language.",
    "What is the most important idea in the following passage? Say why.",
)
_ROUNDS = 12


def _count(tokenizer: Any, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))


def _running_text(passages: tuple[Passage, ...], start: int, chars: int) -> str:
    """Passages from ``start`` on (wrapping round), titles included, until ``chars``."""
    parts: list[str] = []
    total, i = 0, start
    while total < chars:
        p = passages[i % len(passages)]
        parts.append(f"{p.title}\n\n{p.text}")
        total += len(parts[-1]) + 2
        i += 1
    return "\n\n".join(parts)


def _exact_prefix(tokenizer: Any, ids: list[int], n: int) -> str | None:
    """The text of the first tokens of ``ids`` that encodes to exactly ``n`` tokens, or None
    when the cut keeps oscillating around it."""
    k, seen = n, set[int]()
    while 0 < k <= len(ids) and k not in seen and len(seen) < _ROUNDS:
        seen.add(k)
        text: str = tokenizer.decode(ids[:k], skip_special_tokens=True)
        if "\ufffd" in text:  # cut inside a character: one token back
            k -= 1
            continue
        m = _count(tokenizer, text)
        if m == n:
            return text
        k += n - m
    return None


def _prompt_text(tokenizer: Any, head: str, passages: tuple[Passage, ...], start: int,
                 n: int) -> str:
    """``head`` and running text from ``start``, exactly ``n`` tokens."""
    for attempt in range(min(len(passages), 16)):
        chars = 6 * n + 256
        while True:
            ids = list(tokenizer.encode(head + _running_text(passages, start + attempt, chars),
                                        add_special_tokens=False))
            if len(ids) >= n + 8:
                break
            chars *= 2
        text = _exact_prefix(tokenizer, ids, n)
        if text is not None:
            return text
    raise UsageError("--input-len", f"could not cut the corpus to exactly {n} tokens with "
                     "this tokenizer")


def text_prompts(tokenizer: Any, *, num_prompts: int, input_len: int, output_len: int,
                 range_ratio: float = 0.0, range_mode: RangeMode = "vllm", seed: int = 0,
                 corpus: Corpus | None = None) -> list[Prompt]:
    """``num_prompts`` requests of real text (an instruction, then a passage) with exact,
    verified input lengths; the same ``seed`` gives the same lengths as ``random``'s."""
    corpus = corpus if corpus is not None else load_corpus()
    rng = np.random.default_rng(seed)
    input_lens, output_lens = draw_lengths(
        tokenizer, rng, num_prompts=num_prompts, input_len=input_len, output_len=output_len,
        range_ratio=range_ratio, range_mode=range_mode)
    asks = [f"{text}\n\n" for text in INSTRUCTIONS]
    ask_tokens = [_count(tokenizer, ask) for ask in asks]
    prompts = []
    for n_in, n_out in zip(input_lens, output_lens, strict=True):
        which = int(rng.integers(len(asks)))
        start = int(rng.integers(len(corpus.passages)))
        head = asks[which] if n_in >= 2 * ask_tokens[which] else ""
        text = _prompt_text(tokenizer, head, corpus.passages, start, n_in)
        prompts.append(Prompt(text, n_in, n_out))
    return prompts
