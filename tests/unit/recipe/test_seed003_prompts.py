"""Seed 003's recipes send text of the stated lengths (random token ids make speculative
decoding meaningless), and say so; the CMP recipe's chat is the write-up's one request, and
where the H200 recipe departs from the write-up (three chats, other weights, engine and GPU)
the departure stands on every reference row it shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.recipe import load_recipe, resolve_paths

from ._differs import differs_on_every_row

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


def test_no_reference_says_the_prompts_are_random() -> None:
    for path in (REPO / "params/seeds").rglob("003*"):
        assert "random prompts" not in path.read_text(encoding="utf-8"), path


def test_the_h200_recipes_departures_are_on_its_reference_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    recipe = resolve_paths(load_recipe(REPO / "params/seeds/003-qwen38-27b-h200.yaml"), REPO)
    chat = next(s for s in recipe.scenarios if s.name == "chat-3k")
    differs, table = differs_on_every_row(recipe)
    assert {a.setting for a in differs} >= {"model.id", "engine.version",
                                            "hardware.gpu_name_pattern",
                                            "scenarios.chat-3k.num_prompts"}
    for _, row in table.iterrows():
        if row["scenario"] == "chat-3k" and chat.num_prompts != 1:
            assert f"scenarios.chat-3k.num_prompts = {chat.num_prompts} prompts" in \
                row["caveats"]
