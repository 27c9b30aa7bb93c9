"""Parameter counts from config.json alone against the published counts of real models.

For each case in ``tests/data/configs/corpus`` (a real ``config.json`` and the count its
maker published, with the quote and source) this prints the plan's total and active count in
the published scope (towers and MTP layers in or out as the source counts them), the signed
error, the layer pattern the plan read and where its defaults came from. The tolerances are
2 % total and 5 % active; a case outside them says why.

Run: ``python benchmarks/params_vs_published.py [--save]``. Prints a Markdown table; with
``--save`` also writes ``benchmarks/results/params_vs_published-<UTC time>.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib.memory._corpus import (
    ACTIVE_TOLERANCE_PCT,
    TOTAL_TOLERANCE_PCT,
    CorpusResult,
    check_corpus_case,
    load_corpus,
)
from benchmarks._tables import publish, save_flag

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "configs" / "corpus"


def _b(value: float | None) -> str:
    return "–" if value is None else f"{value / 1e9:.3f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}%"


def table(results: list[CorpusResult]) -> str:
    rows = ["| model | model_type | layers (mixers · feed-forwards) | total B (published) | err "
            "| active B (published) | err | in tolerance |", "|" + "---|" * 8]
    for r in results:
        ok = "yes" if r.within else f"no: {r.explains}"
        rows.append(f"| {r.name} | {r.model_type} | {r.layers} | {_b(r.total)} "
                    f"({_b(r.total_published)}) | {_pct(r.total_err_pct)} | {_b(r.active)} "
                    f"({_b(r.active_published)}) | {_pct(r.active_err_pct)} | {ok} |")
    return "\n".join(rows)


def summary(results: list[CorpusResult]) -> str:
    types = {r.model_type for r in results}
    totals = [abs(r.total_err_pct) for r in results]
    actives = [abs(r.active_err_pct) for r in results if r.active_err_pct is not None]
    inside = sum(r.within for r in results)
    return (f"{len(results)} configs, {len(types)} model types; {inside} inside "
            f"{TOTAL_TOLERANCE_PCT:g} % total / {ACTIVE_TOLERANCE_PCT:g} % active, "
            f"{len(results) - inside} explained. Worst total error {max(totals):.2f} %, "
            f"median {sorted(totals)[len(totals) // 2]:.2f} %; worst active error "
            f"{max(actives, default=0):.2f} % over {len(actives)} MoE models.")


def main() -> None:
    save = save_flag(__doc__.splitlines()[0])
    results = [check_corpus_case(c) for c in load_corpus(CORPUS)]
    publish("params_vs_published", table(results), summary(results), results, save)


if __name__ == "__main__":
    main()
