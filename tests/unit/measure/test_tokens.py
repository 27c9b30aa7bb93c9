"""The byte-level tokenizer ``benchlib run --check`` builds prompts with where the model's own
is not on the machine: one token a byte, every text round-trips, nothing read from disk."""

from __future__ import annotations

import pytest

from benchlib.measure import stand_in_tokenizer


@pytest.mark.parametrize("text", ["plain ascii", "héllo wörld", "東京 🚀", " lead and trail "])
def test_one_token_a_byte_and_every_text_round_trips(text: str) -> None:
    tok = stand_in_tokenizer()
    ids = tok.encode(text, add_special_tokens=False)
    assert len(ids) == len(text.encode("utf-8"))
    assert tok.decode(ids) == text


def test_the_vocabulary_is_the_256_bytes() -> None:
    tok = stand_in_tokenizer()
    assert len(tok) == 256
    assert tok.all_special_ids == []
