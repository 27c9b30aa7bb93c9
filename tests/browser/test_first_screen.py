"""The report's first screen in a browser (issue 40): opened at 1,280 × 900 px, the headline
table and the figure lie inside the first 900 px, every other section is folded, and with
every section unfolded the page still fits its width, without console errors. Held for the
kept GPU examples (their reports are docs/examples/) and the kit's small two-variant run."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlib.report import FIGURES, render_report
from tests._browser import check_first_screen, open_report
from tests.unit.report._run import make_run

DATA = Path(__file__).resolve().parents[1] / "data"


def _kept(folder: Path) -> Callable[[Path], Path]:
    def copy(tmp_path: Path) -> Path:
        run = tmp_path / folder.name
        shutil.copytree(folder, run)
        return run
    return copy


RUNS = {"h200-vllm-short": _kept(DATA / "h200_vllm_run" / "h200-vllm-short"),
        "h200-llamacpp": _kept(DATA / "h200_run" / "h200-llamacpp"),
        # five variants of three engines with the speculation-cost section
        "h100-seed003": _kept(DATA / "h100_seed003" / "seed003-qwen38-27b-h200"),
        # two engines, each speculating and not, three concurrencies, energy
        "h100-smollm2": _kept(DATA / "h100_smollm2" / "h200-smollm2"),
        # two engines on the same 8B weights, four concurrencies to 64, the decode floor
        "h100-compare": _kept(DATA / "h100_compare" / "h200-vllm-llamacpp"),
        "two-variants": make_run}


@pytest.mark.parametrize("name", RUNS)
def test_the_report_answers_on_its_first_screen(name: str, tmp_path: Path) -> None:
    run = RUNS[name](tmp_path)
    page = render_report(run, strict=False).html
    seen = open_report(page, tmp_path / "report.png", FIGURES)
    check_first_screen(seen)
    # unfolded, the details are there to read
    assert "Provenance" in seen.text and "Caveats" in seen.text
