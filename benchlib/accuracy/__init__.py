"""Accuracy of the running engine through ``lm-eval`` (:func:`run_gsm8k`: GSM8K from local
data files), recorded beside its speed."""

from benchlib.accuracy._gsm8k import AccuracyResult, gsm8k_task, run_gsm8k

__all__ = ["AccuracyResult", "gsm8k_task", "run_gsm8k"]
