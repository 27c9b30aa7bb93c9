"""SGLang's few_shot_gsm8k, as the kit renders and scores it: one rendered prompt against
SGLang's own functions when sglang can be imported, else against its source's format
(quoted below), the answer extraction, and the harness against the scripted server on the
kit's 12-item sample (a smoke test, said so: 7 questions) and on the shipped test set at
the page's 200 questions."""

from __future__ import annotations

import ast
import importlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchlib.accuracy import answer_value, render_prompt, run_few_shot_gsm8k
from benchlib.accuracy._few_shot import INVALID, STOP
from benchlib.recipe import AccuracySpec

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "params" / "data" / "gsm8k-sample"
#: GSM8K's whole test set, shipped (tools/gsm8k_test_set.py)
TEST_SET = REPO / "params" / "data" / "gsm8k"
LINES = [json.loads(line) for line in (SAMPLE / "test.jsonl").read_text(
    encoding="utf-8").splitlines() if line.strip()]

# SGLang's own source (python/sglang/test/few_shot_gsm8k.py; benchmark/gsm8k/bench_sglang.py
# is the same), quoted line for line, for when sglang cannot be imported here:
#
#     def get_one_example(lines, i, include_answer):
#         ret = "Question: " + lines[i]["question"] + "\nAnswer:"
#         if include_answer:
#             ret += " " + lines[i]["answer"]
#         return ret
#
#     def get_few_shot_examples(lines, k):
#         ret = ""
#         for i in range(k):
#             ret += get_one_example(lines, i, True) + "\n\n"
#         return ret
#
#     def get_answer_value(answer_str):
#         answer_str = answer_str.replace(",", "")
#         numbers = re.findall(r"\d+", answer_str)
#         if len(numbers) < 1:
#             return INVALID
#         try:
#             return ast.literal_eval(numbers[-1])
#         except SyntaxError:
#             return INVALID
#
#     @sgl.function
#     def few_shot_gsm8k(s, question):
#         s += few_shot_examples + question
#         s += sgl.gen("answer", max_tokens=512,
#                      stop=["Question", "Assistant:", "<|separator|>"])


def _quoted_one(lines: Sequence[Mapping[str, str]], i: int, include_answer: bool) -> str:
    ret = "Question: " + lines[i]["question"] + "\nAnswer:"
    if include_answer:
        ret += " " + lines[i]["answer"]
    return ret


def _quoted_few(lines: Sequence[Mapping[str, str]], k: int) -> str:
    ret = ""
    for i in range(k):
        ret += _quoted_one(lines, i, True) + "\n\n"
    return ret


def _quoted_value(answer_str: str) -> Any:
    answer_str = answer_str.replace(",", "")
    numbers = re.findall(r"\d+", answer_str)
    if len(numbers) < 1:
        return INVALID
    try:
        return ast.literal_eval(numbers[-1])
    except SyntaxError:
        return INVALID


def _sglangs_own() -> tuple[str, Callable[..., str], Callable[..., str], Callable[[str], Any]]:
    """SGLang's functions if sglang is importable here, else the quoted source's."""
    try:
        mod = importlib.import_module("sglang.test.few_shot_gsm8k")
    except ImportError:
        return "quoted source", _quoted_one, _quoted_few, _quoted_value
    return ("sglang " + str(getattr(importlib.import_module("sglang"), "__version__", "?")),
            mod.get_one_example, mod.get_few_shot_examples, mod.get_answer_value)


def test_one_rendered_prompt_is_sglangs() -> None:
    _, one, few, _ = _sglangs_own()
    for i in range(len(LINES)):
        assert render_prompt(LINES, i, 5) == few(LINES, 5) + one(LINES, i, False)
    prompt = render_prompt(LINES, 6, 5)
    assert prompt.startswith("Question: " + LINES[0]["question"] + "\nAnswer: ")
    assert prompt.endswith("Question: " + LINES[6]["question"] + "\nAnswer:")
    assert prompt.count("\n\nQuestion: ") == 5
    assert STOP == ("Question", "Assistant:", "<|separator|>")


def test_answers_are_read_as_sglang_reads_them() -> None:
    _, _, _, value = _sglangs_own()
    for text in ["The answer is 1,234.", "#### 18", "no number here", "3 then 007",
                 "costs $5.50 in all", "-4", LINES[3]["answer"]]:
        assert answer_value(text) == value(text), text
    assert answer_value("#### 1,234") == 1234 and answer_value("none") == INVALID


def test_the_harness_against_the_scripted_server(scripted: Callable[..., Any],
                                                 tmp_path: Path) -> None:
    server = scripted("--ttft-ms", "1", "--itl-ms", "0", "--model", "m")
    spec = AccuracySpec(task="few_shot_gsm8k", data_dir=SAMPLE, limit=200, num_fewshot=5,
                        max_gen_toks=512, concurrency=64)
    result = run_few_shot_gsm8k(spec, server.url, "m", tmp_path)
    assert (result.n, result.num_shots, result.max_tokens, result.parallel) == (
        len(LINES), 5, 512, 64)
    assert result.caveat and "smoke test" in result.caveat and result.failed == 0
    assert result.output_tokens == 512 * len(LINES)  # from usage: the server fills max_tokens
    assert result.output_throughput == result.output_tokens / result.latency_s
    rows = [json.loads(line) for line in (tmp_path / result.samples).read_text().splitlines()]
    assert [r["label"] for r in rows] == [answer_value(line["answer"]) for line in LINES]


#: ``python/sglang/test/few_shot_gsm8k.py``'s argparse defaults (sgl-project/sglang, stored
#: commit 109fdd2): ``--num-shots 5``, ``--max-new-tokens 512``, ``--parallel 128``; the page
#: passed ``--num-questions 200`` and nothing else (../shared/seeds/001_*.txt, 5.2.1)
FEW_SHOT_GSM8K_DEFAULTS = {"num_fewshot": 5, "max_gen_toks": 512, "concurrency": 128}
PAGE_QUESTIONS = 200


def test_seed_001_runs_the_harness_at_its_defaults() -> None:
    import yaml

    from benchlib.recipe import Recipe

    path = REPO / "params" / "seeds" / "001-glm47-flash-sglang-b200.yaml"
    recipe = Recipe.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    spec = recipe.accuracy
    assert spec is not None and spec.task == "few_shot_gsm8k"
    assert {k: getattr(spec, k) for k in FEW_SHOT_GSM8K_DEFAULTS} == FEW_SHOT_GSM8K_DEFAULTS
    assert spec.limit == PAGE_QUESTIONS
    # the assumption printed beside its figures says the same parallelism
    said = [a for a in recipe.assumptions if a.setting == "accuracy.concurrency"]
    assert len(said) == 1 and said[0].value.startswith(f"{spec.concurrency} ")


def test_the_shipped_test_set_answers_the_pages_200_questions(
        scripted: Callable[..., Any], tmp_path: Path) -> None:
    """Seed 001's data_dir holds GSM8K's whole test set: the page's 200 questions are asked
    (the first 200, as SGLang takes them) and the score is a measurement, not a smoke test."""
    server = scripted("--ttft-ms", "0", "--itl-ms", "0", "--model", "m")
    spec = AccuracySpec(task="few_shot_gsm8k", data_dir=TEST_SET, limit=PAGE_QUESTIONS,
                        num_fewshot=5, max_gen_toks=4, concurrency=64)
    result = run_few_shot_gsm8k(spec, server.url, "m", tmp_path)
    assert result.n == PAGE_QUESTIONS and result.caveat is None and result.failed == 0
    rows = [json.loads(line) for line in (tmp_path / result.samples).read_text().splitlines()]
    full = [json.loads(line) for line in (TEST_SET / "test.jsonl").read_text(
        encoding="utf-8").splitlines()]
    assert [r["label"] for r in rows] == [answer_value(x["answer"]) for x in full[:200]]
