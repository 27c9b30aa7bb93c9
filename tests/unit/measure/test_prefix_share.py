"""A prompt set's shared prefixes, in whole blocks: what a prefix cache could serve."""

from __future__ import annotations

from typing import Any

import pytest

from benchlib.measure import Prompt, text_prompts
from benchlib.measure.workload._prefix_share import PREFIX_BLOCK_TOKENS, prefix_share


class _Chars:
    """A tokenizer of one token per character."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]


def test_counts_whole_blocks_of_the_longest_shared_prefix() -> None:
    prompts = [Prompt("a" * 40 + "x", 41, 1), Prompt("a" * 40 + "y", 41, 1),
               Prompt("b" * 20, 20, 1), Prompt("a" * 5 + "z" * 30, 35, 1)]
    share = prefix_share(_Chars(), prompts, block=16)
    # the first two share 40 characters: 2 whole blocks each; the others none beyond a block
    assert share.sharing == 2 and share.longest == 40
    assert share.cacheable_tokens == 64 and share.total_tokens == 41 + 41 + 20 + 35
    assert share.sharing_fraction == pytest.approx(0.5)
    assert "2 of 4 prompts (50 %)" in share.summary()


def test_chat_prompts_are_read_by_their_messages() -> None:
    msgs = [{"role": "user", "content": "q" * 32}]
    share = prefix_share(_Chars(), [Prompt(msgs, 0, 1), Prompt(msgs, 0, 1)])
    assert share.sharing == 2 and share.cacheable_tokens == 64


def test_distinct_text_prompts_share_no_block(tokenizer: Any) -> None:
    prompts = text_prompts(tokenizer, num_prompts=8, input_len=256, output_len=8, seed=3)
    share = prefix_share(tokenizer, prompts)
    # an instruction is shared by some; a passage never past it
    assert share.longest < 2 * PREFIX_BLOCK_TOKENS


def test_a_unit_of_one_token_counts_every_shared_token() -> None:
    """SGLang's radix cache (page size 1) and llama.cpp's slots serve any shared prefix: two
    prompts that start alike for 5 tokens share at a unit of 1, not at vLLM's 16; the line
    names the unit and where it came from."""
    prompts = [Prompt("abcdeX" * 4, 24, 1), Prompt("abcdeY" * 4, 24, 1), Prompt("z" * 9, 9, 1)]
    assert prefix_share(_Chars(), prompts).sharing == 0
    one = prefix_share(_Chars(), prompts, block=1, block_from="SGLang's default --page-size 1")
    assert (one.sharing, one.cacheable_tokens, one.longest) == (2, 10, 5)
    assert "share a prefix of ≥ 1 token with another (SGLang's default --page-size 1; " \
        "longest 5)" in one.summary()
    assert "assumed" in prefix_share(_Chars(), prompts).block_from
