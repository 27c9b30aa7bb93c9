"""Warmups on the wire: the scripted server's truth file hashes every request's prompt, so it
shows which requests repeated one. A measured run's warmups repeat none of its measured
prompts; with warmups_like_vllm each warmup is the first measured prompt, as vllm bench serve
sends them, and the result says which."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchlib._exceptions import UsageError
from benchlib.measure import MeasureConfig, measure

from ._truth import load_jsonl


def _measure(server: Any, tmp_path: Path, tiny_model: Path, **kw: Any) -> Any:
    cfg = MeasureConfig(**{"base_url": server.url, "model": "scripted", "tokenizer": tiny_model,
                           "input_len": 24, "output_len": 4, "num_prompts": 6,
                           "max_concurrency": 2, "num_warmups": 3, "disable_tqdm": True,
                           "result_json": tmp_path / "r.json", **kw})
    return measure(cfg)


@pytest.mark.parametrize("endpoint,dataset", [("completions", "random"), ("chat", "random"),
                                              ("chat", "text")])
def test_warmups_repeat_no_measured_prompt(scripted: Callable[..., Any], tmp_path: Path,
                                           tiny_model: Path, endpoint: str,
                                           dataset: str) -> None:
    server = scripted("--ttft-ms", "1", "--itl-ms", "1")
    result = _measure(server, tmp_path, tiny_model, endpoint=endpoint, dataset=dataset)
    rows = load_jsonl(server.truth)
    warm, measured = rows[:3], rows[3:]
    assert len(measured) == result.completed == 6
    assert not {r["prompt_sha256"] for r in warm} & {r["prompt_sha256"] for r in measured}
    assert len({r["prompt_sha256"] for r in rows}) == 9  # and no two warmups alike either
    assert result.benchlib.warmup_prompts.startswith("distinct, seed ")


def test_warmups_like_vllm_send_the_first_measured_prompt(scripted: Callable[..., Any],
                                                          tmp_path: Path,
                                                          tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "1", "--itl-ms", "1")
    result = _measure(server, tmp_path, tiny_model, warmups_like_vllm=True,
                      max_concurrency=1)
    rows = load_jsonl(server.truth)
    assert {r["prompt_sha256"] for r in rows[:3]} == {rows[3]["prompt_sha256"]}
    assert result.benchlib.warmup_prompts == "the first measured prompt (like vllm bench serve)"


def test_a_file_too_short_for_distinct_warmups_says_what_to_do(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "1", "--itl-ms", "1")
    data = tmp_path / "p.jsonl"
    data.write_text("".join(f'{{"prompt": "question {i}"}}\n' for i in range(7)))
    with pytest.raises(UsageError, match=r"--num-warmups.*warmups-like-vllm"):
        _measure(server, tmp_path, tiny_model, dataset="file", dataset_path=data)
    result = _measure(server, tmp_path, tiny_model, dataset="file", dataset_path=data,
                      num_warmups=1)
    rows = load_jsonl(server.truth)
    assert result.completed == 6 and rows[0]["prompt_sha256"] not in {
        r["prompt_sha256"] for r in rows[1:]}
