"""Cutting ``Serving Benchmark Result`` blocks out of a log: padding, prefixes, bad blocks."""

from __future__ import annotations

import pytest

from benchlib.importers._common import Malformed
from benchlib.importers._console import serving_blocks, stat_key

#: as vLLM prints it: "{:<40} {:<10}" lines, so with trailing spaces
PADDED = "\n".join([
    "Traffic request rate: inf",
    "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
    "{:<40} {:<10}".format("Successful requests:", 32),
    "{:<40} {:<10.2f}".format("Benchmark duration (s):", 79.8712),
    "{s:{c}^{n}}".format(s="Time to First Token", n=50, c="-"),
    "{:<40} {:<10.2f}".format("Mean TTFT (ms):", 7279.5583),
    "=" * 50,
]) + "\n"


def test_a_block_its_sections_and_the_lines_before_it() -> None:
    [block] = serving_blocks(PADDED.splitlines())
    assert block.start == 2
    assert [(ln.section, ln.label, ln.value) for ln in block.lines] == [
        ("", "Successful requests:", "32"), ("", "Benchmark duration (s):", "79.87"),
        ("Time to First Token", "Mean TTFT (ms):", "7279.56")]
    assert block.preamble == ("Traffic request rate: inf",)


def test_a_quoted_block_keeps_its_prefix_on_every_line() -> None:
    quoted = ["# " + line for line in PADDED.splitlines()]
    [block] = serving_blocks(quoted)
    assert block.lines[0].value == "32"
    assert block.preamble == ("Traffic request rate: inf",)


def test_collapsed_whitespace_reads_the_same() -> None:
    collapsed = [" ".join(line.split()) for line in PADDED.splitlines()]
    assert serving_blocks(collapsed)[0].lines == serving_blocks(PADDED.splitlines())[0].lines


def test_an_unclosed_block_is_malformed() -> None:
    lines = PADDED.splitlines()[:-1]
    with pytest.raises(Malformed, match="line 2: the result block is never closed"):
        serving_blocks(lines)
    with pytest.raises(Malformed, match="a new one starts at line 7"):
        serving_blocks(lines + lines[1:])


def test_a_line_that_is_not_label_value_is_malformed() -> None:
    lines = PADDED.splitlines()
    lines.insert(3, "Traceback (most recent call last)")
    with pytest.raises(Malformed, match="line 4: cannot read 'Traceback"):
        serving_blocks(lines)


@pytest.mark.parametrize("label,key", [
    ("Mean TTFT (ms):", "mean_ttft_ms"), ("Median ITL (ms):", "median_itl_ms"),
    ("P99.9 TPOT (ms):", "p99.9_tpot_ms"), ("P50 E2EL (ms):", "p50_e2el_ms"),
    ("Mean E2EL incl. Client Queue (ms):", "mean_e2el_including_client_queue_ms"),
    ("Median probe E2EL (ms):", None), ("Max ITL (ms):", None),
])
def test_statistic_labels(label: str, key: str | None) -> None:
    names = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2el",
             "E2EL incl. Client Queue": "e2el_including_client_queue"}
    assert stat_key(label, names) == key
