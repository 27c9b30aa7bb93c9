"""The report page: every section, both figures inline, no script or network, and the
write-up and its Markdown export."""

from __future__ import annotations

import re
from pathlib import Path

from benchlib.report import FIGURES, render_report
from tests.unit.report._run import make_run


def test_report_has_every_section_and_figure_inline(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    files = render_report(run)
    page = files.html.read_text()
    for section in ("writeup", "what-ran", "provenance", "checks", "plan-vs-engine", "plan",
                    "energy", "figures", "speculative",
                    "references", "caveats", "names"):
        assert f"id='{section}'" in page, section
    for fig in FIGURES:
        assert re.search(rf"<figure id='fig-{fig}'><img alt='[^']+' "
                         r"src='data:image/png;base64,[A-Za-z0-9+/=]{2000,}'>", page), fig
    assert "<script" not in page and "http://" not in page and "https://" not in page
    # plan against measured: TPOT over the floor, the joules per output token beside TPOT
    assert "tpot_over_floor" in page and "5.00" in page
    plan = page[page.index("id='plan'"):page.index("id='energy'")]
    assert re.search(r"<th>median_<wbr>tpot_<wbr>ms</th><th>energy_<wbr>j_<wbr>per_<wbr>output_<wbr>"
                     r"token</th>", plan)
    assert "<td>2.50</td><td>0.781</td>" in plan and "<td>10.00</td><td>3.12</td>" in plan
    # energy: the figures, what they include, why a variant has none, power over time
    energy = page[page.index("id='energy'"):page.index("id='figures'")]
    assert "<td>923.00</td><td>instant</td><td>75.00</td><td>True</td><td>True</td>" in energy
    assert "1380–1980 (mean 1601)" in energy and "sw_power_cap 50 %" in energy
    assert "NVML unavailable: NVML Shared Library Not Found" in energy
    assert re.search(r"<figure id='fig-power'><img alt='[^']+' "
                     r"src='data:image/png;base64,[A-Za-z0-9+/=]{2000,}'>", energy)
    # the plan against the live engine, a flagged row saying what to do; the expected KV use
    assert "524288" in page and "yes: the KV cache&#x27;s bytes per token" in page
    assert "kv_<wbr>cache_<wbr>usage_<wbr>expected" in page and "<td>0.125</td>" in page
    writeup = files.markdown.read_text()
    assert "0.781 J per output token (idle draw of\n  75.00 W included)" in writeup
    assert "| llamacpp | kv_cache_gib | 0.0156 | 0.0312 | GiB | 100.00 | yes |" in writeup
    # caveats from the comparison, the machine and the references
    assert "1 of 4 streams arrived in bursts" in page
    assert "expected 1 GPUs, found 0" in page and "checkpoint formats differ" in page
    assert "109.42" in page and "engine version" in page
    assert "answered without calling get_weather" in page and "openai 3.60.0" in page
    assert "Accuracy (GSM8K)" in page and "8 items: a smoke test" in page
    assert files.markdown.read_text().startswith("# ab")
    assert "benchlib run params/ab.yaml" in files.markdown.read_text()


def test_report_of_a_run_that_measured_nothing(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    for name in ("vllm-ngram", "llamacpp"):
        (run / name / ".results" / "03_measure.json").unlink()
    page = render_report(run).html.read_text()
    assert "fig-pareto" not in page and "id='what-ran'" in page


def test_report_renders_in_a_browser(tmp_path: Path) -> None:
    from tests._browser import open_report

    page = render_report(make_run(tmp_path)).html
    shot = tmp_path / "report.png"
    seen = open_report(page, shot, FIGURES)
    assert seen.errors == []
    assert all(w > 300 for w in seen.figures.values()), seen.figures
    assert seen.title == "ab" and "Published references" in seen.text
    assert shot.stat().st_size > 50_000
