"""The ``sglang-random`` dataset: prompts built the way SGLang's ``bench_serving
--dataset-name random`` builds them, with the kit's shipped corpus in place of ShareGPT.

What SGLang does (``sample_random_requests`` with ``random_sample=True``, as in 0.5.7):

* lengths: ``compute_random_lens`` draws every input length, then every output length, with
  numpy's global generator seeded by ``--seed`` (default 1):
  ``np.random.randint(max(int(L * range_ratio), 1), L + 1, size=n)`` — uniform in
  ``[max(1, ⌊L·r⌋), L]``, so at its default ratio 0 anywhere from 1 to L;
* text: ShareGPT's conversations with two turns or more, their first turn, shuffled with
  Python's ``random`` seeded the same; for each in turn (empty ones skipped) the turn is
  encoded with the tokenizer's defaults (special tokens added), cut to the drawn length or
  repeated whole until it is that long and cut, and decoded again (special tokens kept);
* ``prompt_len`` is the drawn length: SGLang's ``Total input tokens`` is their sum.

Here the first turns are the corpus's passages, each its title and its text (:mod:`._corpus`,
shipped with its licence, offline; the title because three passages — None, NotImplemented,
Ellipsis — open with the same sentence, 26 tokens or more); the draws are the same calls on
generators seeded alike (``RandomState(seed)`` is the stream ``np.random.seed(seed)`` gives,
``random.Random(seed)`` Python's), so with the seed SGLang used the lengths are SGLang's
exactly: seed 1, 10 prompts of 1000 / 1000 draw 6,101 input and 4,220 output tokens, the
totals SGLang printed for seed 001's chat at concurrency 1.
Where the corpus runs out before ``num_prompts`` (154 passages; SGLang would return fewer
requests, ShareGPT never runs out), it is walked again in a new shuffle, each passage on walk
``w`` of ``W`` starting at its ``⌊w·n/W⌋``-th of ``n`` words and wrapping round to its start
(:func:`_rotated`). Why: a prompt is its passage from the start, so a passage walked twice
gave two prompts one prefix — at 320 and 500 prompts every prompt shared hundreds to
thousands of tokens with another, which an engine's prefix cache serves, flattering TTFT. The
first walk is SGLang's recipe unchanged (so any ``num_prompts`` up to the corpus's size, and
seed 001's 10 at concurrency 1, send the same text as before); a later walk's prompts share
no prefix of a block (16 tokens) with any other of the set (``--check`` reports the share,
:mod:`._prefix_share`).

How it differs from the kit's other datasets: ``random`` sends random token ids (``vllm bench
serve``'s random dataset), which a model reads as noise — its answers, speculative acceptance
and prefix-cache hits are not language's; ``text`` writes an instruction then a passage cut to
exactly the drawn number of tokens; ``sglang-random`` is SGLang's recipe, its cut included:
decoding the cut ids and encoding them again can give a token more or less (and a tokenizer
that adds BOS puts its text at the start, as SGLang's does), so each prompt's ``prompt_len``
here is the count of its text as sent (encoded without special tokens, the server adds its
own), and the drawn lengths SGLang would report are :func:`sglang_lengths`.
"""

from __future__ import annotations

import random
import re
from typing import Any

import numpy as np

from benchlib._exceptions import UsageError
from benchlib.measure.wire._request import Prompt
from benchlib.measure.workload._corpus import Corpus, load_corpus

__all__ = ["sglang_lengths", "sglang_random_prompts"]


def sglang_lengths(rng: np.random.RandomState, *, num_prompts: int, input_len: int,
                   output_len: int, range_ratio: float) -> tuple[list[int], list[int]]:
    """SGLang's ``compute_random_lens`` for the inputs, then the outputs, from ``rng``."""
    def draw(full: int) -> list[int]:
        return [int(n) for n in rng.randint(max(int(full * range_ratio), 1), full + 1,
                                            size=num_prompts)]
    return draw(input_len), draw(output_len)


def _cut(ids: list[int], n: int) -> list[int]:
    """SGLang's cut: the first ``n`` ids, or the ids repeated whole until ``n`` and cut."""
    if len(ids) > n:
        return ids[:n]
    ratio = (n + len(ids) - 1) // len(ids)
    return (ids * ratio)[:n]


def _rotated(text: str, walk: int, walks: int) -> str:
    """``text`` from its ``⌊walk·n/walks⌋``-th word on, its start after a blank line: walk 0
    is ``text`` itself."""
    starts = [m.start() for m in re.finditer(r"(?<!\S)\S", text)]
    k = starts[walk * len(starts) // walks] if walk and starts else 0
    return text if k == 0 else f"{text[k:]}\n\n{text[:k].rstrip()}"


def sglang_random_prompts(tokenizer: Any, *, num_prompts: int, input_len: int,
                          output_len: int, range_ratio: float = 0.0, seed: int = 1,
                          corpus: Corpus | None = None) -> list[Prompt]:
    """``num_prompts`` prompts of real text cut to SGLang's drawn lengths (module doc)."""
    if not 0 <= range_ratio <= 1:
        raise UsageError("--random-range-ratio", "must be in [0, 1] for sglang-random")
    corpus = corpus if corpus is not None else load_corpus()
    input_lens, output_lens = sglang_lengths(np.random.RandomState(seed),
                                             num_prompts=num_prompts, input_len=input_len,
                                             output_len=output_len, range_ratio=range_ratio)
    shuffler = random.Random(seed)
    prompts: list[Prompt] = []
    walks = -(-num_prompts // max(len(corpus.passages), 1))
    walk = 0
    while len(prompts) < num_prompts:
        turns = [_rotated(f"{p.title}\n\n{p.text}", walk, walks)
                 for p in corpus.passages]
        walk += 1
        shuffler.shuffle(turns)
        before = len(prompts)
        for turn in turns:
            i = len(prompts)
            if i == num_prompts:
                break
            ids = list(tokenizer.encode(turn))
            if not ids:
                continue
            text: str = tokenizer.decode(_cut(ids, input_lens[i]))
            sent = len(tokenizer.encode(text, add_special_tokens=False))
            prompts.append(Prompt(text, sent, output_lens[i]))
        if len(prompts) == before:
            raise UsageError("--dataset", "the corpus gave no prompt text")
    return prompts
