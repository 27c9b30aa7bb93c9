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


def test_the_set_is_sorted_by_its_tokens_not_its_order() -> None:
    """Two prompts apart in the set, with one unlike both between them, still share."""
    prompts = [Prompt("a" * 20 + "x", 21, 1), Prompt("b" * 21, 21, 1),
               Prompt("a" * 20 + "y", 21, 1)]
    share = prefix_share(_Chars(), prompts, block=4)
    assert (share.sharing, share.longest, share.cacheable_tokens) == (2, 20, 40)


def test_one_shared_token_is_one_unit_of_one() -> None:
    share = prefix_share(_Chars(), [Prompt("ab", 2, 1), Prompt("ac", 2, 1)], block=1)
    assert (share.sharing, share.cacheable_tokens) == (2, 2)


def test_no_special_token_is_counted_as_shared(tokenizer: Any) -> None:
    """The tokenizer's BOS starts every encoded prompt: counted, it would make every prompt
    share one token at SGLang's unit of one."""
    share = prefix_share(tokenizer, [Prompt("alpha", 1, 1), Prompt("zulu", 1, 1)], block=1)
    assert share.sharing == 0 and share.longest == 0


def test_chat_messages_join_as_lines_and_a_message_without_content_adds_none() -> None:
    msgs = [{"role": "system", "content": "ab"}, {"role": "assistant"},
            {"role": "user", "content": "c"}]
    share = prefix_share(_Chars(), [Prompt(msgs, 0, 1)], block=1)
    assert share.total_tokens == len("ab\n\nc")


def test_an_empty_set_shares_nothing() -> None:
    share = prefix_share(_Chars(), [])
    assert (share.prompts, share.sharing, share.longest, share.total_tokens) == (0, 0, 0, 0)
    assert share.sharing_fraction == share.cacheable_fraction == 0.0


@pytest.mark.parametrize(("block", "unit"), [(1, "token"), (2, "tokens")])
def test_the_summary_line_in_full(block: int, unit: str) -> None:
    share = prefix_share(_Chars(), [Prompt("abcd", 4, 1), Prompt("abce", 4, 1),
                                    Prompt("zzzz", 4, 1)], block=block, block_from="its flag")
    assert share.summary() == (
        f"2 of 3 prompts (67 %) share a prefix of ≥ {block} {unit} with another (its flag; "
        "longest 3); 50.0 % of prompt tokens a prefix cache could serve"
        if block == 1 else
        f"2 of 3 prompts (67 %) share a prefix of ≥ {block} {unit} with another (its flag; "
        "longest 3); 33.3 % of prompt tokens a prefix cache could serve")


def test_the_sharing_percentage_is_the_fraction_times_100() -> None:
    prompts = [Prompt(p, 4, 1) for p in ("abcd", "abce", "abcf", "zzzz")]
    assert "3 of 4 prompts (75 %)" in prefix_share(_Chars(), prompts, block=1).summary()
