"""The sglang-random dataset: SGLang's bench_serving random dataset as SGLang builds it, the
kit's corpus in place of ShareGPT, and seed 001's recipe sending it as the page did (10 text
prompts at concurrency 1, at the page's own drawn lengths)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from benchlib._exceptions import UsageError
from benchlib.adapters import adapter
from benchlib.measure import MeasureConfig, build_requests, concurrency_seed, load_corpus
from benchlib.measure.workload._prefix_share import PREFIX_BLOCK_TOKENS, prefix_share
from benchlib.measure.workload._sglang_random import _rotated, sglang_lengths, sglang_random_prompts
from benchlib.recipe import Recipe

REPO = Path(__file__).resolve().parents[3]
SEED_001 = REPO / "params" / "seeds" / "001-glm47-flash-sglang-b200.yaml"

#: sglang.bench_serving's printed totals at concurrency 1 (10 prompts, seed 1, ratio 0) in
#: ../shared/seeds/001_*.txt: "Total input tokens" and "Total generated tokens" (ignore_eos)
PAGE_C1 = {"chat": (6101, 4220), "reasoning": (6101, 44462), "summarization": (41941, 4220)}


@pytest.mark.parametrize("scenario,lengths", [("chat", (1000, 1000)),
                                              ("reasoning", (1000, 8000)),
                                              ("summarization", (8000, 1000))])
def test_the_draw_is_sglangs_own(scenario: str, lengths: tuple[int, int]) -> None:
    ins, outs = sglang_lengths(np.random.RandomState(1), num_prompts=10,
                               input_len=lengths[0], output_len=lengths[1], range_ratio=0.0)
    assert (sum(ins), sum(outs)) == PAGE_C1[scenario]
    assert all(1 <= n <= lengths[0] for n in ins) and all(1 <= n <= lengths[1] for n in outs)


def test_each_prompt_is_a_passage_cut_or_repeated_to_its_length(tokenizer: Any) -> None:
    prompts = sglang_random_prompts(tokenizer, num_prompts=12, input_len=600, output_len=8,
                                    seed=1)
    ins, outs = sglang_lengths(np.random.RandomState(1), num_prompts=12, input_len=600,
                               output_len=8, range_ratio=0.0)
    assert [p.output_len for p in prompts] == outs
    passages = {f"{p.title}\n\n{p.text}" for p in load_corpus().passages}
    bos = tokenizer.bos_token or ""
    repeated = 0
    for prompt, drawn in zip(prompts, ins, strict=True):
        assert isinstance(prompt.prompt, str)
        text = prompt.prompt.removeprefix(bos)  # the tokenizer's BOS decoded, as SGLang's
        source = next(t for t in passages if text[:40] == t[:40])
        ids = tokenizer.encode(source)
        if len(ids) < drawn:  # repeated whole, then cut: the passage comes round again
            repeated += 1
            at = text.find(source[:10], 1)
            assert at > 0 and source.startswith(text[at:at + 40])
        # what is sent re-encodes to the drawn length, give or take the cut's merge
        assert abs(prompt.prompt_len - drawn) <= 2, (prompt.prompt_len, drawn)
    assert repeated > 0  # the draw reached past some passage's length
    # the same seed, the same prompts; another seed, others
    again = sglang_random_prompts(tokenizer, num_prompts=12, input_len=600, output_len=8, seed=1)
    assert again == prompts
    assert sglang_random_prompts(tokenizer, num_prompts=12, input_len=600, output_len=8,
                                 seed=2) != prompts


def test_more_prompts_than_passages_walks_the_corpus_again(tokenizer: Any) -> None:
    n = len(load_corpus().passages) + 5
    prompts = sglang_random_prompts(tokenizer, num_prompts=n, input_len=8, output_len=2)
    assert len(prompts) == n


@pytest.mark.parametrize("scenario", ["chat", "reasoning", "summarization"])
def test_seed_001s_prompts_share_no_prefix_block(scenario: str, tiny_model: Path,
                                                 tokenizer: Any) -> None:
    """At 320 and 500 prompts the corpus (154 passages) is walked two to four times; no
    prompt of a set shares a whole block (16 tokens) of prefix with another, so no TTFT of
    the set is a prefix-cache hit on its own set. SGLang's radix cache serves prefixes token
    by token (page size 1): at that unit prompts that begin alike share a few tokens, under
    1 % of the set's prompt tokens, which the result reports in SGLang's unit."""
    recipe = Recipe.model_validate(yaml.safe_load(SEED_001.read_text(encoding="utf-8")))
    unit = adapter(recipe.engine.kind).prefix_block(recipe.engine.args)
    assert unit is not None and unit[0] == 1
    s = next(s for s in recipe.scenarios if s.name == scenario)
    for i, conc in enumerate(s.concurrencies):
        cfg = s.measure_config(base_url="http://127.0.0.1:1", model="m", tokenizer=tiny_model,
                               result_json=None, max_concurrency=conc,
                               num_prompts=s.prompts_at(i), seed=s.seed_at(i))
        prompts, _ = build_requests(cfg, tokenizer)
        share = prefix_share(tokenizer, prompts)
        assert share.sharing == 0, (conc, share.summary())
        assert share.longest < PREFIX_BLOCK_TOKENS
        own = prefix_share(tokenizer, prompts, *unit)
        assert own.cacheable_fraction < 0.01 and own.longest == share.longest, own.summary()


def test_a_later_walk_starts_each_passage_elsewhere() -> None:
    text = "one two three four five six"
    assert _rotated(text, 0, 3) == text
    assert _rotated(text, 1, 3) == "three four five six\n\none two"
    assert _rotated(text, 2, 3) == "five six\n\none two three four"


def test_seed_001_sends_ten_text_prompts_at_the_pages_lengths(tiny_model: Path,
                                                               tokenizer: Any) -> None:
    """Each scenario at concurrency 1: 10 prompts of real text (not token ids), whose drawn
    lengths are the ones SGLang drew for the page (its printed totals)."""
    recipe = Recipe.model_validate(yaml.safe_load(SEED_001.read_text(encoding="utf-8")))
    for s in recipe.scenarios:
        assert s.dataset == "sglang-random" and s.concurrencies[0] == 1
        assert s.prompts_at(0) == 10
        cfg = s.measure_config(base_url="http://127.0.0.1:1", model="m", tokenizer=tiny_model,
                               result_json=None, max_concurrency=1, num_prompts=10,
                               seed=concurrency_seed(s.seed, 0))
        prompts, bodies = build_requests(cfg, tokenizer)
        sent = [json.loads(b) for b in bodies]
        assert all(isinstance(b["prompt"], str) and b["ignore_eos"] for b in sent)
        words = sum(len(b["prompt"].split()) for b in sent)
        assert words > 0.3 * sum(p.prompt_len for p in prompts)  # prose, not token soup
        ins, _ = sglang_lengths(np.random.RandomState(cfg.seed), num_prompts=10,
                                input_len=s.input_len, output_len=s.output_len,
                                range_ratio=s.random_range_ratio)
        assert (sum(ins), sum(b["max_tokens"] for b in sent)) == PAGE_C1[s.name]
        assert abs(sum(p.prompt_len for p in prompts) - sum(ins)) <= 20


def test_needs_sglangs_range_mode_and_a_tokenizer(tiny_model: Path) -> None:
    with pytest.raises(ValueError, match="range_ratio_mode sglang"):
        MeasureConfig(base_url="http://h:1", model="m", dataset="sglang-random")
    cfg = MeasureConfig(base_url="http://h:1", model="m", dataset="sglang-random",
                        range_ratio_mode="sglang", num_prompts=2, input_len=8)
    with pytest.raises(UsageError, match="--tokenizer"):
        build_requests(cfg, None)
