"""A recipe's ``accuracy``: GSM8K against the running engine after the scenarios, scored by
one of two harnesses whose numbers do not compare with each other.

* ``gsm8k``: lm-eval's own task (5-shot from ``train.jsonl``, ``Question: …\\nAnswer:``, the
  strict ``#### N`` and the flexible last-number match), run by lm-eval in its own
  environment (:mod:`benchlib.accuracy._gsm8k`);
* ``few_shot_gsm8k``: SGLang's ``sglang.test.few_shot_gsm8k`` (and
  ``benchmark/gsm8k/bench_sglang.py``) as the kit re-implements it
  (:mod:`benchlib.accuracy._few_shot`): the first ``num_fewshot`` items of ``test.jsonl``
  with their answers as the shots, the questions from the first item on, greedy,
  ``max_tokens`` 512, stop at ``Question`` / ``Assistant:`` / ``<|separator|>``, the last
  integer of the answer against the label's, ``concurrency`` requests at a time (SGLang's
  ``--parallel``); it reports accuracy, the invalid fraction, latency (the batch's wall time)
  and output throughput, as SGLang prints them — seed 001's published 0.845.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["AccuracySpec"]


class AccuracySpec(BaseModel):
    """GSM8K against the running engine, after the scenarios (03_measure)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Literal["gsm8k", "few_shot_gsm8k"] = Field(
        "gsm8k", description="gsm8k: lm-eval's task; few_shot_gsm8k: SGLang's harness "
                             "(its prompt, shots, answer extraction), as seed 001's page ran")
    data_dir: Path = Field(description="folder with GSM8K's test.jsonl (and train.jsonl for "
                                       "lm-eval's shots); params/data/gsm8k: the whole "
                                       "test set and 5 training items; "
                                       "params/data/gsm8k-sample: 7 questions, a smoke "
                                       "test, said so in the result")
    limit: int | None = Field(None, ge=1, description="items of test.jsonl to answer; "
                              "None: all (the cookbook: 200)")
    num_fewshot: int = Field(5, ge=0, description="worked examples in each prompt")
    endpoint: Literal["completions", "chat"] = Field(
        "completions", description="completions: raw few-shot prompts; chat: with the "
                                   "model's chat template, few-shot as turns (lm-eval only)")
    concurrency: int = Field(1, ge=1, description="requests kept in flight (lm-eval's "
                             "num_concurrent; few_shot_gsm8k's --parallel: its default 128)")
    max_gen_toks: int = Field(256, ge=1, description="tokens an answer may take "
                              "(few_shot_gsm8k: 512)")
    python: Path = Field(Path(".engines/lm-eval/bin/python"),
                         description="the interpreter with lm-eval (make lm-eval; gsm8k only)")

    @model_validator(mode="after")
    def _harness(self) -> AccuracySpec:
        if self.task == "few_shot_gsm8k" and self.endpoint != "completions":
            raise ValueError("endpoint: few_shot_gsm8k sends raw few-shot text, as SGLang's "
                             "does (completions)")
        return self
