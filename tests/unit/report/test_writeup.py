"""The write-up: a skeleton made into the user's notebook once, its citations filled from
the run's results by name, a missing name refused with what could have been cited."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from benchlib import UsageError
from benchlib.report import fmt_number, render_writeup, report_context, writeup_notebook
from tests.unit.report._run import make_run


@pytest.mark.parametrize(("value", "shown"), [
    (109.4235, "109.42"), (1651.5, "1,651.5"), (0.81234, "0.812"), (0.0, "0.00"),
    (58, 58), (None, "n/a"), (True, True), ("x", "x")])
def test_numbers_read_as_prose(value: object, shown: object) -> None:
    assert fmt_number(value) == shown


def test_citations_are_filled_from_the_run(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    skeleton = tmp_path / "s.md"
    skeleton.write_text("# {{ recipe.name }}\n\nintro\n\n## Numbers\n\nvLLM decoded at "
                        "{{ variants.vllm_ngram.chat.c1.tok_s }} tok/s against "
                        "{{ '%.1f' | format(variants['vllm-ngram'].chat.c4.tpot_ms) }} ms; the "
                        "floor is {{ plan.llamacpp.decode_floor_ms }} ms; published "
                        "{{ references.seed.per_user_tok_s }}.\n")
    nb_path = writeup_notebook(run, skeleton)
    nb = nbformat.read(str(nb_path), as_version=4)
    assert [c.cell_type for c in nb.cells] == ["raw", "markdown", "markdown"]
    text = render_writeup(nb_path, report_context(run))
    assert text.startswith("# ab\n") and "vLLM decoded at 400.00 tok/s" in text
    assert "against 10.0 ms" in text and "floor is 0.5 ms" in text
    assert "published 109.42" in text


def test_the_users_edits_are_kept(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    nb_path = writeup_notebook(run, None)  # the kit's own skeleton
    nb = nbformat.read(str(nb_path), as_version=4)
    assert any("## How to reproduce" in c.source for c in nb.cells)
    nb.cells[2].source = "## Mine\n\nllama.cpp: {{ variants.llamacpp.chat.c1.tok_s }}"
    nbformat.write(nb, str(nb_path))
    assert writeup_notebook(run, None) == nb_path
    text = render_writeup(nb_path, {**report_context(run), "recipe_path": "params/ab.yaml"})
    assert "llama.cpp: 1,000.0" in text


def test_the_default_skeleton_cites_every_variant(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    ctx = {**report_context(run), "recipe_path": "params/ab.yaml"}
    text = render_writeup(writeup_notebook(run, None), ctx)
    assert "vllm_ngram (vllm 0.32.0, speculative off) decoded chat at\n  400.00 tok/s" in text
    assert "llamacpp" in text and "benchlib run params/ab.yaml" in text


def test_a_name_the_run_lacks_is_refused_with_close_names(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    skeleton = tmp_path / "s.md"
    skeleton.write_text("## A\n\n{{ variants.vllm_ngram.chat.c1.tok_ss }}\n")
    with pytest.raises(UsageError) as info:
        render_writeup(writeup_notebook(run, skeleton), report_context(run))
    message = str(info.value)
    assert "writeup.ipynb cell 1" in message and "tok_ss" in message
    assert "variants.vllm_ngram.chat.c1.tok_s" in message and info.value.exit_code == 2


def test_a_missing_skeleton_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        writeup_notebook(make_run(tmp_path), tmp_path / "none.md")


def test_a_run_that_ended_gets_its_report_with_the_write_up_error(tmp_path: Path) -> None:
    from benchlib.report import render_report

    run = make_run(tmp_path)
    skeleton = tmp_path / "s.md"
    skeleton.write_text("## A\n\n{{ variants.gone.chat.c1.tok_s }}\n")
    with pytest.raises(UsageError):
        render_report(run, skeleton)
    files = render_report(run, skeleton, strict=False)
    assert "The write-up was not rendered" in files.html.read_text()
    assert "id='figures'" in files.html.read_text()
