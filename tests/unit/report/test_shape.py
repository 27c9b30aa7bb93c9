"""A write-up skeleton checked against the shape of a complete run of its recipe, before
anything runs: the seeds' skeletons cite only what their runs will have; a typo is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.recipe import load_recipe, resolve_paths
from benchlib.report import check_skeleton, shape_context

REPO = Path(__file__).resolve().parents[3]
RECIPES = [*sorted((REPO / "params" / "seeds").glob("*.yaml")), REPO / "params" / "demo.yaml"]


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_each_recipes_write_up_cites_what_its_run_will_have(path: Path) -> None:
    recipe = resolve_paths(load_recipe(path), REPO)
    assert check_skeleton(recipe) >= 4


def test_a_name_the_run_will_not_have_is_refused(tmp_path: Path) -> None:
    recipe = resolve_paths(load_recipe(REPO / "params" / "seeds" /
                                       "003-qwen38-27b-cmp170hx.yaml"), REPO)
    skeleton = tmp_path / "w.md"
    for cited in ("variants.vllm_dflash2_k7.chat_3k.c4.tok_s",  # c4 is not measured
                  "variants.vllm_dflash2.chat_3k.c1.tok_s",  # no such variant
                  "references.nope.per_user_tok_s"):
        skeleton.write_text(f"## A\n\n{{{{ {cited} }}}}\n")
        with pytest.raises(UsageError) as info:
            check_skeleton(recipe.model_copy(update={"writeup": skeleton}))
        assert info.value.exit_code == 2 and "cell 1" in str(info.value)


def test_free_form_parts_take_any_name() -> None:
    recipe = resolve_paths(load_recipe(REPO / "params" / "demo.yaml"), REPO)
    ctx = shape_context(recipe)
    assert str(ctx["plan"].vllm_ngram.decode_floor_ms) == "…"
    assert ctx["variants"]["vllm_ngram"]["chat"]["c4"]["tok_s"] == 1.0
    assert "c4" not in ctx["variants"]["vllm_ngram"]["summarization"]
    assert str(ctx["takeaway"].lines) == "…"  # computed from the run: free-form here
