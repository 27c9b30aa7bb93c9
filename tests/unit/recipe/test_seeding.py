"""A scenario's ``concurrency_seeds``: the kit's derived seeds (no prompt sent twice) or the
page's one seed for every concurrency, under which seed 001's recipe draws the lengths of all
nine of the page's bench_serving blocks, their printed totals exactly."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from benchlib.measure import build_requests
from benchlib.measure.workload._sglang_random import sglang_lengths
from benchlib.recipe import Recipe, Scenario

REPO = Path(__file__).resolve().parents[3]
SEED_001 = REPO / "params" / "seeds" / "001-glm47-flash-sglang-b200.yaml"
BLOCKS = REPO / "params" / "seeds" / "references" / "001-sglang-cookbook-blocks.txt"


def _page_totals() -> dict[tuple[int, int, int], tuple[int, int]]:
    """(input len, output len, prompts) → the page's (Total input, Total generated) tokens,
    read from its printed blocks."""
    text = BLOCKS.read_text(encoding="utf-8")
    out = {}
    for block in text.split("python -m sglang.bench_serving")[1:]:
        def num(pattern: str, block: str = block) -> int:
            found = re.search(pattern, block)
            assert found is not None, pattern
            return int(found.group(1))
        key = (num(r"--random-input-len (\d+)"), num(r"--random-output-len (\d+)"),
               num(r"--num-prompts (\d+)"))
        out[key] = (num(r"Total input tokens:\s+(\d+)"),
                    num(r"Total generated tokens:\s+(\d+)"))
    return out


def _scenarios(seeding: str) -> list[Scenario]:
    data = yaml.safe_load(SEED_001.read_text(encoding="utf-8"))
    for s in data["scenarios"]:
        s["concurrency_seeds"] = seeding
    return Recipe.model_validate(data).scenarios


def _drawn(s: Scenario, i: int) -> tuple[int, int]:
    ins, outs = sglang_lengths(np.random.RandomState(s.seed_at(i)), num_prompts=s.prompts_at(i),
                               input_len=s.input_len, output_len=s.output_len,
                               range_ratio=s.random_range_ratio)
    return sum(ins), sum(outs)


def test_the_pages_seeding_draws_all_nine_blocks() -> None:
    page = _page_totals()
    assert len(page) == 9
    for s in _scenarios("same"):
        for i, _ in enumerate(s.concurrencies):
            assert _drawn(s, i) == page[(s.input_len, s.output_len, s.prompts_at(i))]
            assert s.seeding(i).startswith("same: seed 1 at every concurrency")


def test_the_derived_seeds_draw_others_after_the_first() -> None:
    page = _page_totals()
    for s in _scenarios("derived"):
        assert s.seed_at(0) == 1 and s.seeding(0).startswith("derived: seed 1 (")
        assert _drawn(s, 0) == page[(s.input_len, s.output_len, 10)]
        for i in range(1, len(s.concurrencies)):
            assert s.seed_at(i) != 1 and "derived from 1" in s.seeding(i)
            assert _drawn(s, i) != page[(s.input_len, s.output_len, s.prompts_at(i))]


def test_same_seed_sends_the_earlier_prompts_again(tiny_model: Path, tokenizer: Any) -> None:
    """Why it is labelled: the 80 prompts at concurrency 16 begin with the 10 of concurrency
    1, token for token; the derived seeds send none of them again."""
    def prompts(s: Scenario, i: int) -> list[str]:
        cfg = s.measure_config(base_url="http://h:1", model="m", tokenizer=tiny_model,
                               result_json=None, max_concurrency=s.concurrencies[i],
                               num_prompts=s.prompts_at(i), seed=s.seed_at(i))
        return [json.loads(b)["prompt"] for b in build_requests(cfg, tokenizer)[1]]
    same, derived = _scenarios("same")[0], _scenarios("derived")[0]
    assert prompts(same, 1)[:10] == prompts(same, 0)
    assert not set(prompts(derived, 1)) & set(prompts(derived, 0))


def test_an_unknown_seeding_is_refused() -> None:
    with pytest.raises(ValueError, match="concurrency_seeds"):
        _scenarios("page")


def test_the_writeups_prompt_counts_are_the_recipes() -> None:
    """The write-up's caveat says what the recipe sends: 10 prompts at concurrency 1, five
    per slot above it, each count it names sent at the concurrency it names."""
    text = (REPO / "params" / "seeds" / "writeups" / "001.md").read_text(encoding="utf-8")
    said = re.search(r"10 at concurrency 1, 5 × concurrency above it \(([^)]*)\)", text)
    assert said is not None, "the caveat no longer states the counts"
    named = {int(c): int(n) for n, c in re.findall(r"(\d+) at (\d+)", said.group(1))}
    sent: dict[int, set[int]] = {}
    for s in _scenarios("derived"):
        assert (s.concurrencies[0], s.prompts_at(0)) == (1, 10)
        for i, conc in enumerate(s.concurrencies[1:], 1):
            assert s.prompts_at(i) == 5 * conc
            sent.setdefault(conc, set()).add(s.prompts_at(i))
    assert {c: {n} for c, n in named.items()} == sent


@pytest.mark.parametrize("path", sorted((REPO / "params" / "seeds").glob("001-*.yaml")),
                         ids=lambda p: p.name)
def test_seed_001s_seeding_and_warmup_departures_stand_on_its_rows(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each seed-001 recipe's derived seeds and distinct warmup are not the page's: each row
    of a scenario drawn so says it (the page's seeding is one setting away,
    concurrency_seeds), the B200 recipe's and the H200 one's alike."""
    from benchlib.pipeline.steps._references import references_table
    from benchlib.recipe import load_recipe, resolve_paths

    monkeypatch.chdir(REPO)
    recipe = resolve_paths(load_recipe(path), REPO)
    assert not any(s.warmups_like_vllm for s in recipe.scenarios)
    table = references_table(recipe, "")
    assert table is not None and not table.empty
    derived = {s.name for s in recipe.scenarios if s.concurrency_seeds == "derived"}
    assert derived
    for _, row in table.iterrows():
        caveats = str(row["caveats"])
        assert "differs from the source: scenarios.*.num_warmups" in caveats
        if row["scenario"] in derived:
            assert "differs from the source: scenarios.*.concurrency_seeds = derived" in \
                caveats
