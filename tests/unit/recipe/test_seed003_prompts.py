"""Seed 003's recipes send text of the stated lengths (random token ids make speculative
decoding meaningless), and the CMP recipe's chat is the write-up's one request."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.recipe import load_recipe

REPO = Path(__file__).resolve().parents[3]
RECIPES = sorted((REPO / "params/seeds").glob("003-*.yaml"))


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_no_speculating_recipe_sends_random_token_ids(path: Path) -> None:
    recipe = load_recipe(path)
    assert any(r.engine.speculative.label != "off" for _, r in recipe.variant_recipes())
    for s in recipe.scenarios:
        assert s.dataset != "random", s.name


def test_the_cmp_chat_is_one_request() -> None:
    recipe = load_recipe(REPO / "params/seeds/003-qwen38-27b-cmp170hx.yaml")
    chat = next(s for s in recipe.scenarios if s.name == "chat-3k")
    assert chat.num_prompts == 1 and chat.input_len == 3163
