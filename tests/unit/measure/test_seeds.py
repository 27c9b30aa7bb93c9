"""The one seed rule (benchlib.measure.workload._seeds): deterministic, distinct per purpose, and the
prompts it seeds never collide, where the plain seed did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchlib.measure import (
    concurrency_seed,
    derive,
    probe_seed,
    ramp_seed,
    random_prompts,
    repeat_seed,
    sdk_seed,
    warmup_seed,
)
from benchlib.measure.workload._seeds import SEED_LIMIT


def test_derive_is_deterministic_bounded_and_distinct() -> None:
    assert derive(0, "warmups") == derive(0, "warmups")
    seen = {derive(seed, purpose, i) for seed in (0, 1, 42) for purpose in
            ("concurrency", "repeat", "warmups", "sdk", "probe", "ramp") for i in range(8)}
    assert len(seen) == 3 * 6 * 8
    assert all(0 <= s < SEED_LIMIT for s in seen)
    # a pinned value: the rule is part of the record (a run's seeds can be recomputed)
    assert derive(0, "warmups") == int.from_bytes(
        __import__("hashlib").sha256(b"0/warmups/0").digest()[:4], "big") % SEED_LIMIT


def test_first_of_each_keeps_the_seed_and_the_rest_differ() -> None:
    assert concurrency_seed(7, 0) == 7 and repeat_seed(7, 0) == 7 and ramp_seed(7, 0) == 7
    others = {concurrency_seed(7, 1), concurrency_seed(7, 2), repeat_seed(7, 1),
              ramp_seed(7, 1), warmup_seed(7), sdk_seed(7), probe_seed(7)}
    assert 7 not in others and len(others) == 7


def _texts(prompts: list[Any]) -> set[str]:
    return {p.prompt for p in prompts}


def test_prompts_at_two_concurrencies_share_none(tokenizer: Any) -> None:
    """With equal lengths the random dataset draws the same tokens for the same seed: the 8
    prompts at concurrency 1 were the first 8 of the 16 at concurrency 4 (a prefix-cache hit
    for half the second run). With the rule, none is shared."""
    same = [random_prompts(tokenizer, num_prompts=n, input_len=32, output_len=4, seed=0)
            for n in (8, 16)]
    assert _texts(same[0]) <= _texts(same[1])  # the collision the rule is for
    c1 = random_prompts(tokenizer, num_prompts=8, input_len=32, output_len=4,
                        seed=concurrency_seed(0, 0))
    c4 = random_prompts(tokenizer, num_prompts=16, input_len=32, output_len=4,
                        seed=concurrency_seed(0, 1))
    warm = random_prompts(tokenizer, num_prompts=2, input_len=32, output_len=4,
                          seed=warmup_seed(concurrency_seed(0, 0)))
    assert not _texts(c1) & _texts(c4)
    assert not _texts(warm) & (_texts(c1) | _texts(c4))


def test_a_ramps_longer_prompt_does_not_begin_with_the_shorter(tokenizer: Any) -> None:
    short, long = (random_prompts(tokenizer, num_prompts=1, input_len=n, output_len=1,
                                  seed=ramp_seed(3, j))[0].prompt
                   for j, n in enumerate((64, 128)))
    assert isinstance(short, str) and isinstance(long, str)
    assert not long.startswith(short[:40])


def test_the_module_documents_every_purpose() -> None:
    doc = Path(__import__("benchlib.measure.workload._seeds", fromlist=["x"]).__file__ or "").read_text()
    for purpose in ("concurrency", "ramp", "repeat", "warmups", "sdk", "probe"):
        assert f'"{purpose}"' in doc
