"""Accuracy of the running engine: GSM8K through ``lm-eval`` (:func:`run_gsm8k`) or as
SGLang's ``few_shot_gsm8k`` scores it (:func:`run_few_shot_gsm8k`), from local data files,
recorded beside its speed."""

from benchlib.accuracy._few_shot import (
    FewShotResult,
    answer_value,
    render_prompt,
    run_few_shot_gsm8k,
)
from benchlib.accuracy._gsm8k import AccuracyResult, gsm8k_task, run_gsm8k

__all__ = ["AccuracyResult", "FewShotResult", "answer_value", "gsm8k_task", "render_prompt",
           "run_few_shot_gsm8k", "run_gsm8k"]
