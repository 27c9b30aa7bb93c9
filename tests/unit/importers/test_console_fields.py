"""The console block reader in detail: prefixes on some lines only, blank lines, the lines
between blocks, the value words (``None``, ``not set``, ``inf``), and each error's exact
message with the line it names.

test_console.py covers the layouts; these tests pin what a looser reader would get wrong
without failing outright (a value read from a shifted line, a message off by one line).
"""

from __future__ import annotations

import pytest

from benchlib import UsageError
from benchlib.importers import parse_results
from benchlib.importers._common import Malformed
from benchlib.importers._console import serving_blocks, stat_key

_HEADER = "============ Serving Benchmark Result ============"
_CLOSE = "=" * 50


def _block(*lines: str) -> list[str]:
    return [_HEADER, "Successful requests: 3", "Benchmark duration (s): 1.50", *lines, _CLOSE]


def _error(lines: list[str]) -> str:
    with pytest.raises(Malformed) as caught:
        serving_blocks(lines)
    return str(caught.value)


def _usage_error(lines: list[str]) -> str:
    with pytest.raises(UsageError) as caught:
        parse_results("\n".join(lines) + "\n", "run.log")
    return str(caught.value)


def test_a_prefix_is_cut_only_from_the_lines_that_carry_it() -> None:
    """A header logged with a prefix ("[rank0]: ") over lines printed without one: each
    line, and each line before the block, is read whole."""
    lines = ["[rank0]: Traffic request rate: 2", "Maximum request concurrency: 8",
             "[rank0]: " + _HEADER, "Successful requests: 3",
             "[rank0]: Benchmark duration (s): 1.50", "[rank0]: " + _CLOSE]
    [block] = serving_blocks(lines)
    assert [(ln.label, ln.value) for ln in block.lines] == [
        ("Successful requests:", "3"), ("Benchmark duration (s):", "1.50")]
    assert block.preamble == ("Traffic request rate: 2", "Maximum request concurrency: 8")


def test_a_blank_line_inside_a_block_is_skipped_not_its_end() -> None:
    [block] = serving_blocks([_HEADER, "Successful requests: 3", "", "   ",
                              "Benchmark duration (s): 1.50", _CLOSE])
    assert [(ln.number, ln.label) for ln in block.lines] == [
        (2, "Successful requests:"), (5, "Benchmark duration (s):")]


def test_each_block_s_preamble_is_the_lines_since_the_previous_block() -> None:
    first, second = serving_blocks(["a", *_block(), "b", "c", *_block()])
    assert (first.start, first.preamble) == (2, ("a",))
    assert (second.start, second.preamble) == (8, ("b", "c"))


@pytest.mark.parametrize(("lines", "message"), [
    (["x", _HEADER, "Successful requests: 3"],
     "line 2: the result block is never closed (expected a line of '=' after its last "
     "metric)"),
    (["x", _HEADER, "Successful requests: 3", _HEADER, *_block()[1:]],
     "line 2: the result block is never closed (a new one starts at line 4)"),
    (["x", "y", _HEADER, "Successful requests: 3", "oops", _CLOSE],
     "line 5: cannot read 'oops' in the result block starting at line 3 (expected "
     "'label: value')"),
    (["x", _HEADER, "Successful requests:", _CLOSE],
     "line 3: cannot read 'Successful requests:' in the result block starting at line 2 "
     "(expected 'label: value')"),
])
def test_a_bad_block_is_named_by_its_lines(lines: list[str], message: str) -> None:
    assert _error(lines) == message


def test_a_heading_without_a_value_is_a_line() -> None:
    [block] = serving_blocks(_block("Per-position acceptance (%):", "Position 0: 90.00"))
    assert block.lines[2].label == "Per-position acceptance (%):"
    assert block.lines[2].value == ""


@pytest.mark.parametrize(("label", "key"), [
    ("P50.0 TTFT (ms):", "p50_ttft_ms"), ("P99.90 ITL (ms):", "p99.9_itl_ms"),
    ("Median TPOT (ms):", "median_tpot_ms")])
def test_a_percentile_label_is_spelt_as_vllm_s_key(label: str, key: str) -> None:
    assert stat_key(label, {"TTFT": "ttft", "ITL": "itl", "TPOT": "tpot"}) == key


@pytest.mark.parametrize(("word", "limit"), [("None", None), ("not set", None), ("12", 12)])
def test_a_concurrency_limit_is_a_whole_number_none_or_not_set(word: str,
                                                               limit: int | None) -> None:
    [r] = parse_results("\n".join(_block(f"Maximum request concurrency: {word}")), "run.log")
    assert r.max_concurrency == limit


@pytest.mark.parametrize(("lines", "message"), [
    (["Maximum request concurrency: many"],
     "line 5: Maximum request concurrency: 'many' is not a number"),
    (["Request throughput (req/s): fast"],
     "line 5: Request throughput (req/s): 'fast' is not a number"),
    (["Mean TTFT (ms): slow"], "line 5: Mean TTFT (ms): 'slow' is not a number"),
    (["Peak RTFX: 1", "Peak RTFX: 1"], "line 6: Peak RTFX appears twice in one result block"),
])
def test_a_bad_value_is_named_by_its_line_and_label(lines: list[str], message: str) -> None:
    """The label is named without its colon, and only the colon is cut."""
    assert _usage_error(["log", *_block(*lines)]) == f"run.log: {message}"
