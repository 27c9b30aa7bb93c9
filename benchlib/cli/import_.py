"""``benchlib import``: read published benchmark results (vLLM, SGLang, GuideLLM, AIPerf, the
seed 000 script) into ``vllm bench serve``'s keys, as a table or, with ``--json``, a JSON list.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic is imported when the command runs, not when the CLI starts
    from benchlib.importers import ImportedResult

__all__ = ["format_table", "register", "run"]

#: results side by side per table
COLUMNS = 5


def register(sub: Any) -> None:
    p = sub.add_parser("import", help="read published results (vLLM, SGLang, GuideLLM, AIPerf, "
                       "seed 000) into benchlib's result keys",
                       description="Read a benchmark result file in any of the formats "
                       "benchlib knows (told apart by content, not by name): vllm bench serve "
                       "console blocks and result JSON/JSONL, sglang.bench_serving console "
                       "blocks and JSONL, GuideLLM benchmarks.json, AIPerf "
                       "profile_export_aiperf.json, the seed 000 script's block. A log of a "
                       "sweep gives one result per block. Values come back as printed; what "
                       "the source does not carry is null.")
    p.add_argument("file", type=Path, help="the console log or JSON file to read")
    p.add_argument("--json", action="store_true",
                   help="print the results as a JSON list (every key, extra included)")
    p.set_defaults(func=run)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return str(value)


def _stat(metric: str, stat: str) -> Callable[[ImportedResult], Any]:
    if stat.startswith("p"):
        return lambda r: r.percentile(metric, stat[1:])
    return lambda r: getattr(r, f"{stat}_{metric}_ms")


ROWS: list[tuple[str, Callable[[ImportedResult], Any]]] = [
    ("source", lambda r: r.source_format),
    ("version", lambda r: r.source_version),
    ("model", lambda r: r.model_id),
    ("max concurrency", lambda r: r.max_concurrency),
    ("request rate /s", lambda r: r.request_rate),
    ("completed", lambda r: r.completed),
    ("failed", lambda r: r.failed),
    ("duration s", lambda r: r.duration),
    ("requests/s", lambda r: r.request_throughput),
    ("output tok/s", lambda r: r.output_throughput),
    ("total tok/s", lambda r: r.total_token_throughput),
    *[(f"{name} {stat} ms", _stat(metric, stat))
      for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2EL"))
      for stat in ("mean", "median", "p99")],
    ("extra keys", lambda r: len(r.extra) or None),
]


def format_table(results: Sequence[ImportedResult]) -> str:
    """The main metrics, one column per result (``COLUMNS`` per table), ``-`` where the source
    carries nothing."""
    width = max(len(name) for name, _ in ROWS)
    parts = []
    for start in range(0, len(results), COLUMNS):
        chunk = results[start:start + COLUMNS]
        table = [["result", *[f"#{r.source_index}" for r in chunk]]]
        table += [[name, *[_cell(get(r)) for r in chunk]] for name, get in ROWS]
        widths = [max(len(row[i]) for row in table) for i in range(1, len(chunk) + 1)]
        parts.append("\n".join(
            f"{row[0]:<{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(row[1:], widths,
                                                                              strict=True))
            for row in table))
    head = f"{results[0].source_file}: {len(results)} result{'s' if len(results) > 1 else ''}"
    foot = "'-': not in the source. --json gives every key, with each tool's own in 'extra'."
    return "\n\n".join([head, *parts, foot])


def run(args: argparse.Namespace) -> int:
    from benchlib.importers import import_results

    results = import_results(args.file)
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=2, ensure_ascii=False),
              flush=True)
    else:
        print(format_table(results), flush=True)
    return 0
