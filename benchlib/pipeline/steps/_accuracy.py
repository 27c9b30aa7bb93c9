"""03_measure's accuracy run: the recipe's ``accuracy`` task (lm-eval's gsm8k or SGLang's
few_shot_gsm8k) against the engine, once, its score saved beside the measurements (a failed
run saved as the failure, named in the step's problems)."""

from __future__ import annotations

from collections.abc import Callable

from benchlib._exceptions import BenchlibError
from benchlib.accuracy import run_few_shot_gsm8k, run_gsm8k
from benchlib.recipe import Recipe
from benchlib.runs import AccuracyFailed, MeasureStep, RunFolder, whole

__all__ = ["run_accuracy"]


def run_accuracy(recipe: Recipe, url: str, folder: RunFolder, api_key: str | None,
              results: MeasureStep, save: Callable[[], None], problems: list[str]) -> None:
    """The recipe's accuracy run (lm-eval's gsm8k or SGLang's few_shot_gsm8k) against the
    engine, once: a resumed run keeps a score it has."""
    spec = recipe.accuracy
    assert spec is not None
    key = f"accuracy/{spec.task}"
    earlier = results.accuracy.get(spec.task)
    if earlier is not None and not isinstance(earlier, AccuracyFailed) and earlier.n:
        print(f"{key}: done in an earlier attempt, skipped", flush=True)
        return
    harness = "SGLang's few_shot_gsm8k" if spec.task == "few_shot_gsm8k" else "lm-eval"
    print(f"{key}: {harness}, {spec.limit or 'all'} items, {spec.num_fewshot}-shot, "
          f"{spec.concurrency} at a time", flush=True)
    model = recipe.model.served_model_name
    try:
        if spec.task == "few_shot_gsm8k":
            few = run_few_shot_gsm8k(spec, url, model, folder.path, api_key=api_key)
            results.accuracy[spec.task] = whole(few)
            save()
            print(f"{key}: Accuracy {few.accuracy:.3f}, Invalid {few.invalid:.3f}, Latency "
                  f"{few.latency_s:.3f} s, Output throughput {few.output_throughput:.3f} "
                  f"token/s over {few.n} questions"
                  f"{' — ' + few.caveat if few.caveat else ''}", flush=True)
            return
        acc = run_gsm8k(spec, url, model, folder.path, api_key=api_key)
    except BenchlibError as exc:
        results.accuracy[spec.task] = AccuracyFailed(error=str(exc))
        save()
        problems.append(f"{key}: {exc}")
        return
    results.accuracy[spec.task] = whole(acc)
    save()
    print(f"{key}: strict {acc.strict_match} ± {acc.strict_match_stderr}, flexible "
          f"{acc.flexible_extract} ± {acc.flexible_extract_stderr} over {acc.n} items"
          f"{' — ' + acc.caveat if acc.caveat else ''}", flush=True)
