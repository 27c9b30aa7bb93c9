"""Datasets: random prompts have exactly the drawn token counts; ranges follow each tool."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.measure import file_prompts, length_range, random_prompts
from benchlib.measure.workload._arrivals import arrival_offsets


def test_length_ranges() -> None:
    assert length_range(100, 0.0, "vllm") == (100, 100)
    assert length_range(100, 0.5, "vllm") == (50, 150)
    assert length_range(100, 0.0, "sglang") == (1, 100)
    assert length_range(100, 0.5, "sglang") == (50, 100)


def test_random_prompts_are_exact(tokenizer: Any) -> None:
    prompts = random_prompts(tokenizer, num_prompts=20, input_len=64, output_len=16,
                             range_ratio=0.5, seed=3)
    for p in prompts:
        assert isinstance(p.prompt, str)
        assert len(tokenizer.encode(p.prompt, add_special_tokens=False)) == p.prompt_len
        # vLLM's rule: BOS comes off the 64 asked for, then ±50 %
        assert 31 <= p.prompt_len <= 95 and 8 <= (p.output_len or 0) <= 24
    again = random_prompts(tokenizer, num_prompts=20, input_len=64, output_len=16,
                           range_ratio=0.5, seed=3)
    assert [p.prompt for p in again] == [p.prompt for p in prompts]


def test_file_prompts(tmp_path: Path, tokenizer: Any) -> None:
    path = tmp_path / "p.jsonl"
    rows = [{"prompt": "hello world"}, {"messages": [{"role": "user", "content": "hi"}],
                                        "output_len": 5}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    prompts = file_prompts(path, tokenizer, num_prompts=None, output_len=7)
    assert [p.output_len for p in prompts] == [7, 5]
    assert prompts[0].prompt_len == len(tokenizer.encode("hello world", add_special_tokens=False))
    # counted with the chat template: its text's tokens, not the keys of the BatchEncoding
    # (input_ids, attention_mask) that transformers returns for tokenize=True
    messages = [{"role": "user", "content": "hi"}]
    templated = tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                              tokenize=False)
    assert prompts[1].prompt_len == len(tokenizer.encode(templated, add_special_tokens=False))
    assert prompts[1].prompt_len > 2


def test_file_prompts_errors_name_the_flag(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": 1}\n')
    with pytest.raises(UsageError, match=r"--dataset-path.*bad\.jsonl:1"):
        file_prompts(bad, None, num_prompts=None, output_len=None)
    with pytest.raises(UsageError, match="no such file"):
        file_prompts(tmp_path / "missing.jsonl", None, num_prompts=None, output_len=None)


def test_arrivals_seeded_and_paced() -> None:
    assert arrival_offsets(3, float("inf"), 1.0, 0) == [0.0, 0.0, 0.0]
    a = arrival_offsets(2000, 50.0, 1.0, 7)
    assert a == arrival_offsets(2000, 50.0, 1.0, 7)
    assert a[-1] == pytest.approx(2000 / 50)  # the reference rescales to n / rate
    assert a[0] > 0 and all(x <= y for x, y in itertools.pairwise(a))
    assert arrival_offsets(4, 2.0, float("inf"), 0) == [0.5, 1.0, 1.5, 2.0]
