"""The run at a glance (issue 40): the headline table (variants × scenarios), at most five
sentences each carrying its number, the report's first section with every other section
folded under an anchor, and writeup.md and 04_compare opening with the same table."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from benchlib.pipeline.steps.compare import headline_table
from benchlib.report import render_report, report_context
from benchlib.runs._glance import MAX_LINES, Glance, glance
from tests.unit.report._run import make_run

DATA = Path(__file__).resolve().parents[2] / "data"
VLLM = DATA / "h200_vllm_run" / "h200-vllm-short"
LLAMACPP = DATA / "h200_run" / "h200-llamacpp"


def _row(variant: str, scenario: str, conc: int, tok_s: float, total: float,
         **extra: Any) -> dict[str, Any]:
    return {"variant": variant, "engine": extra.pop("engine", "vllm 1"),
            "speculative": extra.pop("speculative", "off"), "scenario": scenario,
            "concurrency": conc, "per_user_tok_s": tok_s, "output_throughput": total,
            "median_ttft_ms": 10.0 * conc, **extra}


def test_the_vllm_example_at_a_glance() -> None:
    g = Glance.model_validate(report_context(VLLM)["glance"])
    assert [s.model_dump() for s in g.scenarios] == [{"name": "random", "low": 1, "high": 64}]
    ngram = {v.name: v for v in g.variants}["vllm-ngram"].cells["random"]
    # 04_compare's speedup and interval at c1, the figures at c1 and (in total) at c64
    assert round(ngram.speedup or 0, 2) == 4.14 and ngram.significant is True
    assert round(ngram.output_throughput or 0, 1) == 6820.7
    assert "| vllm-ngram (vllm 0.26.0, ngram k=4) | 234.3 | 6,820.7 | 26.7 | 4.14× [2.75, " \
           "4.54], significant |" in g.table
    assert "random: speedup (c1)" in g.table and "random: total tok/s (c64)" in g.table
    assert 1 <= len(g.lines) <= MAX_LINES
    assert all(re.search(r"\d+\.\d\d×", line) for line in g.lines), g.lines
    assert "per user up to 4.14× (random at c1, 95 % interval 2.75–4.54, significant)" in \
        g.lines[-1]


def test_no_speedup_column_where_nothing_speculates() -> None:
    g = Glance.model_validate(report_context(LLAMACPP)["glance"])
    assert "speedup" not in g.table and "speedup" not in g.legend
    assert g.lines[0] == ("Per user, the fastest was q4_k_m, by 1.29× over the next (chat at "
                          "c1: q4_k_m 250.1 against bf16 193.3 tok/s).")
    assert g.lines[1].startswith("In total, the fastest was bf16, by 1.07×")


def test_many_speculating_variants_still_take_five_sentences() -> None:
    rows = []
    for scenario in ("chat", "summ", "random"):
        for c, scale in ((1, 1.0), (4, 3.0)):
            rows.append(_row("off", scenario, c, 50.0, 50.0 * scale))
            for k in range(1, 6):
                rows.append(_row(f"spec{k}", scenario, c, 50.0 + 10 * k, 60.0 * scale,
                                 speculative=f"ngram k={k}", speedup=1 + k / 5,
                                 speedup_over="off", speedup_low=1.0 + k / 10,
                                 speedup_high=1.5 + k / 5,
                                 speedup_verdict="significant, from requests"))
    races = [{"measure": "per user", "winner": "vllm 1", "ratio": 1.5},
             {"measure": "in total", "winner": "vllm 1", "ratio": 1.2}]
    g = glance(rows, races)
    assert len(g.lines) == 4 <= MAX_LINES  # per user, in total, engines, speculation in one
    assert g.lines[-1].startswith("Speculation per user, each over its own engine without it: "
                                  "spec1 (ngram k=1) over off: per user up to 1.20×")
    assert "spec5 (ngram k=5)" in g.lines[-1]
    assert g.lines[0].startswith("Per user, the fastest was spec5 in 3 of 3 scenarios, by "
                                 "1.11× over the next (chat at c1: spec5 100.0 against spec4 "
                                 "90.0 tok/s)")
    assert g.lines[2] == ("Engine against engine (each by its fastest variant), faster per user "
                          "vllm 1 in 1 of 1 (1.50×); in total vllm 1 in 1 of 1 (1.20×).")


def test_the_report_opens_with_the_glance_and_folds_the_rest(tmp_path: Path) -> None:
    run = tmp_path / VLLM.name
    shutil.copytree(VLLM, run)
    page = render_report(run).html.read_text()
    body = page.split("<body>", 1)[1]
    order = [body.index(x) for x in ("<h1>", "id='headline'", "id='fig-pareto'",
                                     "id='takeaway'", "id='contents'", "<details")]
    assert order == sorted(order), order
    before = body[:body.index("<details")]
    assert "<h2" not in before  # nothing but the answer above the details
    sections = re.findall(r"<details id='([\w-]+)'><summary><h2>", body)
    for anchor in ("per-scenario", "writeup", "plan-vs-engine", "steps", "provenance",
                   "caveats", "names"):
        assert anchor in sections, (anchor, sections)
        assert f"<a href='#{anchor}'>" in before
    assert "<h2 id=" not in body  # every section folded (its anchor on its <details>)
    assert "<details open" not in body and "<details id" in body


def test_writeup_md_reads_in_the_same_order(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    (run / "variants.png").write_bytes(b"\x89PNG")  # as 04_compare keeps it
    md = render_report(run).markdown.read_text()
    glance_md = report_context(run)["glance"]
    heads = re.findall(r"^## (.+)$", md, re.MULTILINE)
    assert heads[:3] == ["At a glance", "Per scenario", "Results"], heads
    top = md.split("## At a glance", 1)[1].split("## ", 1)[0]
    order = [top.index(x) for x in (glance_md["table"], "](variants.png)",
                                    glance_md["lines"][0])]
    assert order == sorted(order)
    assert len(re.findall(r"^- ", top, re.MULTILINE)) == len(glance_md["lines"]) <= MAX_LINES


def test_04_compare_shows_the_same_table() -> None:
    rows = json.loads((VLLM / ".results" / "04_compare.json").read_text())["variants"]
    frame = headline_table(pd.DataFrame(rows))
    g = Glance.model_validate(report_context(VLLM)["glance"])
    for v, (_, row) in zip(g.variants, frame.iterrows(), strict=True):
        shown = [str(x) for x in row.iloc[3:]]
        assert f"| {v.name} ({v.engine}, {v.speculative}) | " + " | ".join(shown) + " |" \
            in g.table
