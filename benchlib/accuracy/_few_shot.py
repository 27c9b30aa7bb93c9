"""SGLang's GSM8K harness, ``few_shot_gsm8k``, against the running engine: seed 001's page
scored GLM-4.7-Flash with ``python -m sglang.test.few_shot_gsm8k --num-questions 200``
(Accuracy 0.845, Invalid 0.000, Latency 8.431 s, Output throughput 2195.387 token/s).

What SGLang does (``python/sglang/test/few_shot_gsm8k.py``; ``benchmark/gsm8k/
bench_sglang.py`` is the same program), and what this does alike:

* data: GSM8K's ``test.jsonl``; the shots are its *first* ``num_shots`` items with their
  answers, the questions its first ``num_questions`` items (so the first shots are asked
  too): :func:`few_shot_examples`, :func:`one_example`;
* prompt: the shots, each ``"Question: " + question + "\\nAnswer:" + " " + answer`` and a
  blank line, then ``"Question: " + question + "\\nAnswer:"`` (:func:`render_prompt`);
* generation: greedy (temperature 0), ``max_tokens`` 512, stop at ``Question``,
  ``Assistant:`` or ``<|separator|>``, ``num_threads`` = ``--parallel`` requests at a time;
* answer: commas dropped, the last run of digits (``\\d+``), else invalid
  (:func:`answer_value`); the label is the same function of the reference answer;
* figures: accuracy (mean of equal), invalid (mean of invalid), latency (the batch's wall
  time, s), output throughput (completion tokens over it).

Differences, each recorded in the result: SGLang's runtime backend sends its native
``/generate``; this sends the same text to ``/v1/completions`` (no chat template either way)
— the engine serves the same tokens, its HTTP layer differs. Fewer than 100 questions is a
smoke test, not a measurement (the kit's sample: 7 questions), and says so.
"""

from __future__ import annotations

import ast
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, Field

from benchlib._exceptions import BenchlibError, UsageError
from benchlib.recipe import AccuracySpec

__all__ = ["INVALID", "STOP", "FewShotResult", "answer_value", "few_shot_examples",
           "one_example", "render_prompt", "run_few_shot_gsm8k"]

#: SGLang's marker of an answer without a number
INVALID = -9999999
#: where SGLang's program stops each answer
STOP = ("Question", "Assistant:", "<|separator|>")
#: below this many questions a score is a smoke test
SMALL_SAMPLE = 100


def one_example(lines: Sequence[Mapping[str, str]], i: int, include_answer: bool) -> str:
    """SGLang's ``get_one_example``: item ``i`` as a question, with its answer or not."""
    text = "Question: " + lines[i]["question"] + "\nAnswer:"
    if include_answer:
        text += " " + lines[i]["answer"]
    return text


def few_shot_examples(lines: Sequence[Mapping[str, str]], k: int) -> str:
    """SGLang's ``get_few_shot_examples``: the first ``k`` items, answered, a blank line
    after each."""
    return "".join(one_example(lines, i, True) + "\n\n" for i in range(k))


def render_prompt(lines: Sequence[Mapping[str, str]], i: int, k: int) -> str:
    """The text sent for question ``i`` with ``k`` shots: SGLang's ``few_shot_examples +
    question``."""
    return few_shot_examples(lines, k) + one_example(lines, i, False)


def answer_value(text: str) -> int | float:
    """SGLang's ``get_answer_value``: the last integer of ``text`` (commas dropped), or
    :data:`INVALID`."""
    numbers = re.findall(r"\d+", text.replace(",", ""))
    if not numbers:
        return INVALID
    try:
        value = ast.literal_eval(numbers[-1])
    except SyntaxError:  # "007": a leading zero is no Python literal
        return INVALID
    return value if isinstance(value, int | float) else INVALID


class FewShotResult(BaseModel):
    """What SGLang's ``few_shot_gsm8k`` prints, for this run, with how it was asked."""

    task: str = Field("few_shot_gsm8k", description="the harness")
    endpoint: str = Field(description="what was streamed to: /v1/completions (SGLang's "
                                      "runtime backend sends /generate)")
    n: int = Field(description="questions answered (SGLang's --num-questions)")
    num_shots: int = Field(description="shots: the first items of test.jsonl, answered")
    max_tokens: int = Field(description="tokens an answer may take")
    parallel: int = Field(description="requests at a time (SGLang's --parallel)")
    accuracy: float = Field(description="fraction whose last integer equals the label's")
    invalid: float = Field(description="fraction whose answer holds no integer")
    latency_s: float = Field(description="wall time of the whole batch, seconds")
    output_tokens: int = Field(description="completion tokens, from the server's usage")
    output_throughput: float = Field(description="output_tokens / latency_s, token/s")
    failed: int = Field(description="requests that raised (scored invalid)")
    samples: str = Field(description="per-question log (index, answer, prediction, label), "
                                     "relative to the step's folder")
    caveat: str | None = Field(None, description="why the score may not mean much")


def _read(data_dir: Path) -> list[dict[str, str]]:
    path = data_dir / "test.jsonl"
    if not path.is_file():
        raise UsageError("accuracy.data_dir", f"no test.jsonl in {data_dir} (GSM8K's JSONL: "
                         "one {\"question\", \"answer\"} per line)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def run_few_shot_gsm8k(spec: AccuracySpec, base_url: str, model: str, folder: Path,
                       api_key: str | None = None, timeout_s: float = 7200.0
                       ) -> FewShotResult:
    """Score GSM8K as SGLang's ``few_shot_gsm8k`` does against the engine at ``base_url``
    (no ``/v1``); the per-question log goes to ``folder / "accuracy"``."""
    import openai

    lines = _read(spec.data_dir)
    n = min(spec.limit or len(lines), len(lines))
    labels = [answer_value(line["answer"]) for line in lines[:n]]
    if INVALID in labels:
        raise UsageError("accuracy.data_dir", "an answer of test.jsonl holds no number")
    client = openai.OpenAI(base_url=base_url.rstrip("/") + "/v1", api_key=api_key or "EMPTY",
                           timeout=timeout_s, max_retries=0)
    lock = threading.Lock()
    answers: dict[int, tuple[str, int, str | None]] = {}

    def ask(i: int) -> None:
        try:
            out = client.completions.create(model=model, prompt=render_prompt(
                lines, i, spec.num_fewshot), max_tokens=spec.max_gen_toks, temperature=0,
                stop=list(STOP))
            text = out.choices[0].text or ""
            tokens = out.usage.completion_tokens if out.usage is not None else 0
            found: tuple[str, int, str | None] = (text, tokens, None)
        except openai.OpenAIError as exc:
            found = ("", 0, f"{type(exc).__name__}: {exc}")
        with lock:
            answers[i] = found

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=spec.concurrency) as pool:
        list(pool.map(ask, range(n)))
    latency = time.perf_counter() - start
    preds = [answer_value(answers[i][0]) for i in range(n)]
    failed = sum(answers[i][2] is not None for i in range(n))
    if failed == n:
        raise BenchlibError(f"every few_shot_gsm8k request failed: {answers[0][2]}")
    tokens = sum(answers[i][1] for i in range(n))
    root = folder / "accuracy"
    root.mkdir(parents=True, exist_ok=True)
    log = root / "few_shot_gsm8k.jsonl"
    log.write_text("".join(json.dumps({"index": i, "answer": answers[i][0], "pred": preds[i],
                                       "label": labels[i], "error": answers[i][2]},
                                      ensure_ascii=False) + "\n" for i in range(n)),
                   encoding="utf-8")
    caveat = (f"{n} questions: a smoke test, not a measurement (the page scored 200)"
              if n < SMALL_SAMPLE else None)
    return FewShotResult(
        endpoint="/v1/completions", n=n, num_shots=spec.num_fewshot,
        max_tokens=spec.max_gen_toks, parallel=spec.concurrency,
        accuracy=sum(p == q for p, q in zip(preds, labels, strict=True)) / n,
        invalid=sum(p == INVALID for p in preds) / n, latency_s=latency,
        output_tokens=tokens, output_throughput=tokens / latency if latency > 0 else 0.0,
        failed=failed, samples=str(log.relative_to(folder)), caveat=caveat)
