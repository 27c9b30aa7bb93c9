"""Accuracy through ``lm-eval``: GSM8K against the running engine's OpenAI-compatible
endpoint, from local data files (the hub may be out of reach), as seed 001's cookbook checks
its model (``few_shot_gsm8k``, 200 questions: 0.845).

lm-eval runs in its own interpreter (``make lm-eval``: ``.engines/lm-eval``, ``lm-eval[api]``,
no torch), as ``python -m lm_eval --model local-completions`` (or ``local-chat-completions``
with its chat template) against ``/v1/completions``. The task is lm-eval's own ``gsm8k``
(5-shot, ``Question: …\\nAnswer:``, stop at the next question, greedy, the strict ``#### N``
and the flexible last-number match) with its data read from ``data_dir``'s ``test.jsonl`` and
``train.jsonl`` (the few-shot examples) in GSM8K's published JSONL form, written into the
step's folder so the run says exactly what it asked. Prompts go as text (no tokenizer on
lm-eval's side: the engine tokenizes, and GSM8K's prompts fit any context). The API key
reaches lm-eval through its environment, never its command line; the datasets library works
offline in a cache of its own. A small sample says so: the standard error comes with every
score.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from benchlib._exceptions import BenchlibError, UsageError
from benchlib.recipe import AccuracySpec

__all__ = ["AccuracyResult", "gsm8k_task", "run_gsm8k"]

TASK = "gsm8k_local"
#: below this many items a score is a smoke test, not a measurement
SMALL_SAMPLE = 100
#: GSM8K's training split, whence lm-eval draws the shots
TRAIN_ITEMS = 7473


class AccuracyResult(BaseModel):
    """What lm-eval scored."""

    task: str = Field(description="lm-eval's task as written for this run (gsm8k_local)")
    lm_eval_version: str | None = Field(description="lm-eval's version, from its results")
    endpoint: str = Field(description="completions or chat (with the chat template)")
    n: int = Field(description="items answered")
    num_fewshot: int = Field(description="worked examples in each prompt")
    strict_match: float | None = Field(description="exact match of the '#### N' answer")
    strict_match_stderr: float | None = Field(description="its standard error")
    flexible_extract: float | None = Field(description="exact match of the last number")
    flexible_extract_stderr: float | None = Field(description="its standard error")
    seconds: float = Field(description="wall time of lm-eval")
    samples: str | None = Field(description="lm-eval's per-item log (prompts, answers, "
                                            "scores), relative to the step's folder")
    caveat: str | None = Field(None, description="why the score may not mean much")


def gsm8k_task(spec: AccuracySpec) -> dict[str, Any]:
    """lm-eval's gsm8k task (v3.0) with its data from ``spec.data_dir``."""
    data = {split: str((spec.data_dir / f"{split}.jsonl").resolve())
            for split in ("test", "train")}
    for split, path in data.items():
        if not Path(path).is_file():
            raise UsageError("accuracy.data_dir", f"no {split}.jsonl in {spec.data_dir} "
                             "(GSM8K's JSONL: one {\"question\", \"answer\"} per line)")
    return {
        "task": TASK, "dataset_path": "json", "dataset_kwargs": {"data_files": data},
        "output_type": "generate_until", "training_split": "train", "fewshot_split": "train",
        "test_split": "test", "doc_to_text": "Question: {{question}}\nAnswer:",
        "doc_to_target": "{{answer}}",
        "metric_list": [{"metric": "exact_match", "aggregation": "mean",
                         "higher_is_better": True, "ignore_case": True,
                         "ignore_punctuation": False,
                         "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}],
        "generation_kwargs": {"until": ["Question:", "</s>", "<|im_end|>"],
                              "do_sample": False, "temperature": 0.0,
                              "max_gen_toks": spec.max_gen_toks},
        "repeats": 1, "num_fewshot": spec.num_fewshot,
        "filter_list": [
            {"name": "strict-match", "filter": [
                {"function": "regex", "regex_pattern": "#### (\\-?[0-9\\.\\,]+)"},
                {"function": "take_first"}]},
            {"name": "flexible-extract", "filter": [
                {"function": "regex", "group_select": -1,
                 "regex_pattern": "(-?[$0-9.,]{2,})|(-?[0-9]+)"},
                {"function": "take_first"}]}],
        "metadata": {"version": 3.0}}


def _command(spec: AccuracySpec, base_url: str, model: str, task_dir: Path,
             out: Path) -> list[str]:
    chat = spec.endpoint == "chat"
    url = base_url.rstrip("/") + ("/v1/chat/completions" if chat else "/v1/completions")
    model_args = [f"model={model}", f"base_url={url}", f"num_concurrent={spec.concurrency}",
                  "max_retries=1", "tokenized_requests=False", "tokenizer_backend=None"]
    argv = [str(spec.python), "-m", "lm_eval", "--model",
            "local-chat-completions" if chat else "local-completions",
            "--model_args", ",".join(model_args), "--tasks", TASK,
            "--include_path", str(task_dir), "--output_path", str(out), "--log_samples",
            "--seed", "0", "--batch_size", "1"]
    if spec.limit is not None:
        argv += ["--limit", str(spec.limit)]
    if chat:
        argv += ["--apply_chat_template", "--fewshot_as_multiturn"]
    return argv


def _items(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def caveat_for(n: int, stderr: float | None, train_items: int,
               num_fewshot: int) -> str | None:
    """Why a score may not mean what lm-eval's gsm8k means: too few items to measure, or
    shots drawn from fewer training items than GSM8K's (lm-eval draws them from all 7,473
    with its seed, so a short ``train.jsonl`` gives other shots)."""
    said = []
    if n < SMALL_SAMPLE:
        said.append(f"{n} items: a smoke test, not a measurement (standard error "
                    f"{float('nan') if stderr is None else stderr:.2f})")
    if num_fewshot and train_items < TRAIN_ITEMS:
        said.append(f"the {num_fewshot} shots are drawn from {train_items} training items, "
                    f"not GSM8K's {TRAIN_ITEMS:,}: other shots than lm-eval's own gsm8k")
    return "; ".join(said) or None


def _scores(out: Path) -> dict[str, Any]:
    found = sorted(out.rglob("results_*.json"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise BenchlibError(f"lm-eval wrote no results under {out}")
    data: dict[str, Any] = json.loads(found[-1].read_text(encoding="utf-8"))
    return data


def run_gsm8k(spec: AccuracySpec, base_url: str, model: str, folder: Path,
              api_key: str | None = None, timeout_s: float = 7200.0) -> AccuracyResult:
    """Score GSM8K against the engine at ``base_url`` (no ``/v1``); lm-eval's task, output
    and per-item log go in ``folder / "accuracy"``."""
    if not spec.python.exists():
        raise UsageError("accuracy.python", f"{spec.python} does not exist: `make lm-eval` "
                         "installs lm-eval in .engines/lm-eval")
    root = folder / "accuracy"
    task_dir, out = root / "tasks", root / "lm-eval"
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / f"{TASK}.yaml").write_text(yaml.safe_dump(gsm8k_task(spec), sort_keys=False),
                                           encoding="utf-8")
    argv = _command(spec, base_url, model, task_dir, out)
    with tempfile.TemporaryDirectory(prefix="benchlib-lmeval-") as cache:
        env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
               "HF_DATASETS_CACHE": cache, "HF_HOME": cache,
               "OPENAI_API_KEY": api_key or "EMPTY", "TOKENIZERS_PARALLELISM": "false"}
        start = time.perf_counter()
        log = root / "lm-eval.log"
        with log.open("w", encoding="utf-8") as fh:
            try:
                proc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                      timeout=timeout_s, check=False)
            except subprocess.TimeoutExpired:
                raise BenchlibError(f"lm-eval did not finish in {timeout_s:.0f} s; see "
                                    f"{log}") from None
        seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-5:])
        raise BenchlibError(f"lm-eval exited with code {proc.returncode}: {tail}")
    data = _scores(out)
    scores = data.get("results", {}).get(TASK, {})
    n = int((data.get("n-samples", {}).get(TASK) or {}).get("effective") or 0)
    samples = sorted(out.rglob(f"samples_{TASK}_*.jsonl"))
    caveat = caveat_for(n, scores.get("exact_match_stderr,strict-match"),
                        _items(spec.data_dir / "train.jsonl"), spec.num_fewshot)
    shutil.rmtree(out / "__pycache__", ignore_errors=True)
    return AccuracyResult(
        task=TASK, lm_eval_version=data.get("lm_eval_version"), endpoint=spec.endpoint, n=n,
        num_fewshot=spec.num_fewshot,
        strict_match=scores.get("exact_match,strict-match"),
        strict_match_stderr=scores.get("exact_match_stderr,strict-match"),
        flexible_extract=scores.get("exact_match,flexible-extract"),
        flexible_extract_stderr=scores.get("exact_match_stderr,flexible-extract"),
        seconds=seconds,
        samples=str(samples[-1].relative_to(folder)) if samples else None, caveat=caveat)
