"""The public config corpus: real config.json files, counted from the config alone, against
their published parameter counts (2 % total, 5 % active, or the case says why)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.memory._corpus import CorpusCase, check_corpus_case, load_corpus

CORPUS_DIR = Path(__file__).resolve().parents[2] / "data" / "configs" / "corpus"
CASES = load_corpus(CORPUS_DIR)


def test_the_corpus_is_broad() -> None:
    # issue 12: at least 50 configs over at least 25 model types
    assert len(CASES) >= 50
    assert len({c.model_type for c in CASES}) >= 25


def test_every_case_names_its_sources() -> None:
    for case in CASES:
        assert case.config_source.startswith("http") and case.published.source
        assert case.published.quote


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_matches_its_published_count(case: CorpusCase) -> None:
    r = check_corpus_case(case)
    assert r.within or r.explains, r
