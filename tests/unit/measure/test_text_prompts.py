"""The ``text`` dataset and the corpus it reads: real prose cut to exactly the drawn token
counts, seeded, the same lengths as ``random``'s; the corpus shipped with its licence and
rebuilt byte for byte by its tool; selectable in ``benchlib measure`` and in a recipe."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.cli.measure import config_from_args, register
from benchlib.measure import (
    INSTRUCTIONS,
    Corpus,
    MeasureConfig,
    Passage,
    build_requests,
    load_corpus,
    random_prompts,
    text_prompts,
)
from benchlib.recipe import recipe_from_dict

REPO = Path(__file__).resolve().parents[3]


def _tokens(tokenizer: Any, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))


def test_exact_lengths_the_same_as_randoms(tokenizer: Any) -> None:
    kwargs: dict[str, Any] = {"num_prompts": 40, "input_len": 200, "output_len": 32,
                              "range_ratio": 0.5, "seed": 5}
    prompts = text_prompts(tokenizer, **kwargs)
    for p in prompts:
        assert isinstance(p.prompt, str) and _tokens(tokenizer, p.prompt) == p.prompt_len
    drawn = random_prompts(tokenizer, **kwargs)
    assert [(p.prompt_len, p.output_len) for p in prompts] == [
        (p.prompt_len, p.output_len) for p in drawn]
    assert len({p.prompt_len for p in prompts}) > 20  # the range is really spread


def test_seeded(tokenizer: Any) -> None:
    a = text_prompts(tokenizer, num_prompts=8, input_len=64, output_len=8, seed=1)
    assert [p.prompt for p in a] == [p.prompt for p in text_prompts(
        tokenizer, num_prompts=8, input_len=64, output_len=8, seed=1)]
    assert [p.prompt for p in a] != [p.prompt for p in text_prompts(
        tokenizer, num_prompts=8, input_len=64, output_len=8, seed=2)]


def test_a_request_then_a_passage_of_the_corpus(tokenizer: Any) -> None:
    corpus = load_corpus()
    prose = "\n\n".join(f"{p.title}\n\n{p.text}" for p in corpus.passages)
    for p in text_prompts(tokenizer, num_prompts=12, input_len=300, output_len=8, seed=3):
        assert isinstance(p.prompt, str)
        ask, _, passage = p.prompt.partition("\n\n")
        assert ask in INSTRUCTIONS
        assert passage[:200] in prose  # real text, from a section's start
    # lengths too short for an instruction get text alone, still exact
    for p in text_prompts(tokenizer, num_prompts=12, input_len=6, output_len=8,
                          range_ratio=0.9, seed=3):
        assert isinstance(p.prompt, str) and _tokens(tokenizer, p.prompt) == p.prompt_len
        assert not p.prompt.startswith(INSTRUCTIONS)


def test_longer_than_the_corpus_wraps_round(tokenizer: Any) -> None:
    tiny = Corpus(passages=(Passage("One", "A short passage about names and objects."),
                            Passage("Two", "Another one, about the binding of names.")),
                  source="test", licence="PSF-2.0", licence_file=Path("x"), path=Path("y"))
    [p] = text_prompts(tokenizer, num_prompts=1, input_len=400, output_len=8, corpus=tiny)
    assert isinstance(p.prompt, str) and _tokens(tokenizer, p.prompt) == p.prompt_len
    assert p.prompt.count("Another one") > 3


def test_the_corpus_ships_with_its_licence() -> None:
    corpus = load_corpus()
    assert corpus.licence == "PSF-2.0" and "pydoc_data/topics.py" in corpus.source
    assert corpus.licence_file.name == "LICENSE-PSF.txt"
    licence = corpus.licence_file.read_text(encoding="utf-8")
    assert "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in licence
    assert len(corpus.passages) > 100 and corpus.path.stat().st_size < 300_000
    assert all(p.title and len(p.text) >= 120 for p in corpus.passages)
    assert len({p.text for p in corpus.passages}) == len(corpus.passages)  # none twice
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"measure/data/*"' in pyproject  # installed with the package, not only in git


def test_the_tool_rebuilds_it_byte_for_byte(tmp_path: Path) -> None:
    record = json.loads(load_corpus().path.read_text(encoding="utf-8"))
    if record["python"] != sys.version.split()[0]:
        pytest.skip(f"the corpus was built from CPython {record['python']}'s topics")
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import build_corpus
    finally:
        sys.path.remove(str(REPO / "tools"))
    assert build_corpus.main(["--out", str(tmp_path)]) == 0
    shipped = load_corpus()
    assert (tmp_path / "python-docs.json").read_bytes() == shipped.path.read_bytes()
    assert (tmp_path / "LICENSE-PSF.txt").read_bytes() == shipped.licence_file.read_bytes()


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(["measure", *argv])


def test_selectable_in_measure_and_in_a_recipe(tiny_model: Path, tokenizer: Any) -> None:
    base = ["--base-url", "http://h:1", "--model", "m", "--dataset", "text"]
    with pytest.raises(UsageError, match="--tokenizer: required for the text dataset"):
        config_from_args(_parse(base))
    cfg = config_from_args(_parse([*base, "--tokenizer", str(tiny_model), "--num-prompts",
                                   "3", "--input-len", "50", "--endpoint", "chat"]))
    assert cfg.dataset == "text" and cfg.output_len == 128
    prompts, bodies = build_requests(cfg, tokenizer)
    body = json.loads(bodies[0])
    assert body["messages"][0]["content"] == prompts[0].prompt
    assert prompts[0].prompt_len == 49  # vLLM's rule: the BOS the server adds comes off
    recipe = recipe_from_dict({
        "name": "t", "model": {"id": "m", "local_path": str(tiny_model)},
        "engine": {"kind": "endpoint", "base_url": "http://127.0.0.1:9"},
        "scenarios": [{"name": "words", "dataset": "text", "input_len": 50},
                      {"name": "ids", "input_len": 50}]})
    words, ids = (s.measure_config(base_url="http://h:1", model="m", tokenizer=tiny_model,
                                   result_json=None, max_concurrency=1, num_prompts=2)
                  for s in recipe.scenarios)
    assert (words.dataset, ids.dataset) == ("text", "random")
    assert isinstance(MeasureConfig.model_validate(words.model_dump()), MeasureConfig)
