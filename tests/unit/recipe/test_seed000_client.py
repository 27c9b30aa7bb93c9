"""Seed 000's H200 recipes send what its B200 recipe learned from the post (the server's
sampling, the SDK view, warmups like the post's), its references set the post's
chunks-per-second beside the kit's figure of that name, and every departure from the post
stands on the rows its numbers are on."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.importers import import_results
from benchlib.recipe import load_recipe, resolve_paths
from benchlib.references import load_references

from ._differs import differs_on_every_row

REPO = Path(__file__).resolve().parents[3]
SEEDS = REPO / "params/seeds"
H200 = ["000-glm-kimi-8xh200.yaml", "000-glm-kimi-8xh200-dense-mla.yaml"]
CLIENT = ("sampling", "sdk_view", "warmups_like_vllm", "endpoint", "dataset_path",
          "output_len", "num_prompts", "num_warmups", "concurrencies")


@pytest.mark.parametrize("name", H200)
def test_h200_client_is_the_b200_recipes(name: str) -> None:
    b200 = load_recipe(SEEDS / "000-glm-kimi-8xb200.yaml").scenarios[0]
    h200 = load_recipe(SEEDS / name).scenarios[0]
    assert {k: getattr(h200, k) for k in CLIENT} == {k: getattr(b200, k) for k in CLIENT}
    assert h200.sampling == "server-default" and h200.sdk_view and h200.warmups_like_vllm


@pytest.mark.parametrize("name", ["000.yaml", "000-8xh200.yaml", "000-8xh200-dense-mla.yaml"])
def test_the_posts_tokens_per_sec_stands_beside_chunks_per_second(name: str) -> None:
    blocks = import_results(SEEDS / "references/000-blocks.txt")
    refs = load_references(SEEDS / "references" / name)
    for (ref, figures), block in zip(refs, blocks, strict=True):
        # the printed figure, as the importer read it from the post's block
        printed = block.to_json()["extra"]["decode_chunks_per_s"]
        assert figures["median_text_chunks_per_s"] == printed
        assert "per_user_tok_s" not in figures
        assert any("median_text_chunks_per_s" in c for c in ref.caveats)


@pytest.mark.parametrize("name", H200)
def test_every_departure_is_on_the_reference_rows(name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    recipe = resolve_paths(load_recipe(SEEDS / name), REPO)
    differs, table = differs_on_every_row(recipe)
    # weights, tokenizer, ignore_eos, GPUs, the engine's flags at least
    assert {a.setting.split(".")[0] for a in differs} >= {"model", "scenarios", "hardware",
                                                           "variants"}
    for _, row in table.iterrows():
        assert "differs from the source: scenarios.single-stream.ignore_eos" in row["caveats"]
