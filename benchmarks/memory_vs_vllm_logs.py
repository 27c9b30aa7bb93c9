"""Memory math against published vLLM startups: weights, KV tokens and the predicted budget.

For each case in ``tests/data/vllm_logs`` (a real ``config.json`` plus the log lines vLLM
printed) this compares:

* weights per GPU with "Model loading took X GiB";
* KV tokens and max concurrency computed from the *reported* budget ("Available KV cache
  memory") with "GPU KV cache size" and "Maximum concurrency" — the exact part;
* the budget *predicted* from total memory × utilization − weights − overhead with the reported
  budget — the modelled part (its constants were fitted to these same cases, so this is an
  in-sample error; a new GPU or vLLM version can be further off).

Run: ``python benchmarks/memory_vs_vllm_logs.py [--save]``. Prints a Markdown table; with
``--save`` also writes ``benchmarks/results/memory_vs_vllm_logs-<UTC time>.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib.memory import CaseResult, check_case, load_cases
from benchmarks._tables import publish, save_flag

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "data" / "vllm_logs"


def _f(value: float | None, fmt: str) -> str:
    return "–" if value is None else format(value, fmt)


def table(results: list[CaseResult]) -> str:
    head = ("| case | vLLM | covers | weights GiB/GPU (log) | err | KV tokens (log) | err | "
            "concurrency (log) | budget predicted GiB (log) | err GiB | err |")
    rows = [head, "|" + "---|" * 11]
    for r in results:
        rows.append(
            f"| {r.name} | {r.vllm_version} | {', '.join(r.covers)} | "
            f"{r.weights_gib:.2f} ({_f(r.weights_reported, '.2f')}) | "
            f"{_f(r.weights_err_pct, '+.2f')}% | "
            f"{_f(r.kv_tokens, ',')} ({_f(r.kv_tokens_reported, ',')}) | "
            f"{_f(r.kv_tokens_err_pct, '+.3f')}% | "
            f"{_f(r.concurrency, '.2f')} ({_f(r.concurrency_reported, '.2f')}) | "
            f"{_f(r.budget_predicted_gib, '.2f')} ({_f(r.budget_reported, '.2f')}) | "
            f"{_f(r.budget_err_gib, '+.2f')} | {_f(r.budget_err_pct, '+.1f')}% |")
    return "\n".join(rows)


def summary(results: list[CaseResult]) -> str:
    def worst(values: list[float]) -> str:
        return f"{max(abs(v) for v in values):.3f}" if values else "–"

    kv = [r.kv_tokens_err_pct for r in results if r.kv_tokens_err_pct is not None]
    w = [r.weights_err_pct for r in results if r.weights_err_pct is not None]
    b = [r.budget_err_gib for r in results
         if r.budget_err_gib is not None and (r.budget_reported or 0) > 0]
    return (f"{len(results)} cases: KV tokens worst |err| {worst(kv)}% over {len(kv)}, "
            f"weights worst |err| {worst(w)}% over {len(w)}, predicted budget worst |err| "
            f"{worst(b)} GiB over {len(b)} launches that started")


def main() -> None:
    save = save_flag(__doc__.splitlines()[0])
    results = [check_case(c) for c in load_cases(CASES)]
    publish("memory_vs_vllm_logs", table(results), summary(results), results, save)


if __name__ == "__main__":
    main()
