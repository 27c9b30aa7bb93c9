"""The seed 000 scripts' results block: TTFT and duration mapped, per-chunk numbers kept apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.importers import import_results, parse_results

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"


def test_both_scripts_blocks() -> None:
    requests_py, openai_py = import_results(DATA / "seed000_console.txt")
    assert (requests_py.source_format, requests_py.model_id) == ("seed000-console",
                                                                 "glm-5.2-fp8")
    assert (requests_py.num_prompts, requests_py.completed, requests_py.failed) == (1, 1, 0)
    assert requests_py.mean_ttft_ms == 71.4  # 0.0714 s
    assert requests_py.duration == 4.327  # "4.3270 초"
    assert requests_py.extra == {"script": "requests_benchmark.py", "output_chunks": 366,
                                 "tpot_per_chunk_ms": 11.7, "decode_chunks_per_s": 85.77}
    assert openai_py.mean_ttft_ms == 340.1 and openai_py.duration == 4.8275
    assert openai_py.extra["script"] == "openai_benchmark.py"
    assert openai_py.extra["tpot_per_chunk_ms"] == 11.6


def test_what_the_script_does_not_measure_is_null() -> None:
    r = import_results(DATA / "seed000_console.txt")[0]
    # chunks are not tokens; per-chunk TPOT is not vLLM's; one request has no percentiles
    assert r.total_output_tokens is None and r.mean_tpot_ms is None
    assert r.output_throughput is None and r.median_ttft_ms is None
    assert r.percentiles("ttft") == {} and r.source_version is None


def test_the_blog_copy_reads_the_same() -> None:
    blog = import_results(DATA / "seed000_blog_excerpt.txt")
    terminal = import_results(DATA / "seed000_console.txt")
    assert [r.to_json() | {"source_file": ""} for r in blog] == [
        r.to_json() | {"source_file": ""} for r in terminal]


def test_a_truncated_block_is_malformed() -> None:
    lines = (DATA / "seed000_console.txt").read_text().splitlines()
    text = "\n".join(lines[:11])  # stops after TPOT
    with pytest.raises(UsageError, match=r"seed\.log: line 6: the results block is never closed "
                                         r"\(expected a line of '=' after 'Throughput'\)"):
        parse_results(text, "seed.log")
    lines[9] = "TTFT (첫 토큰) : 빠름 초"
    with pytest.raises(UsageError, match=r"seed\.log: line 10: TTFT: '빠름' is not a number"):
        parse_results("\n".join(lines), "seed.log")
    lines[9] = "TTFT: 0.07"
    with pytest.raises(UsageError, match=r"line 10: cannot read 'TTFT: 0\.07' in the results "
                       r"block at line 6 \(expected 총 생성 토큰 수, 전체 소요 시간, TTFT, TPOT, "
                       r"Throughput\)"):
        parse_results("\n".join(lines), "seed.log")
    del lines[9]
    with pytest.raises(UsageError, match="line 6: the results block has no TTFT line"):
        parse_results("\n".join(lines), "seed.log")


def _block() -> list[str]:
    """The first results block of the console log: rule, title, rule, five fields, rule."""
    return (DATA / "seed000_console.txt").read_text().splitlines()[4:13]


def test_a_block_needs_its_rules_and_each_field_once() -> None:
    from benchlib.importers._common import Malformed
    from benchlib.importers._seed import seed_results

    block = _block()
    assert [i for i, _ in seed_results(block)] == [1]  # a block at the very start is read
    # blank lines inside a block are skipped, not its end
    spaced = [*block[:4], "", *block[4:]]
    assert seed_results(spaced)[0][1]["mean_ttft_ms"] == 71.4
    # the rule above the title marks a block: without it (a title first, or under another
    # line) there is none, even when the file ends with a rule
    assert seed_results(block[1:]) == []
    assert seed_results(["log line", *block[1:]]) == []
    # a title that ends the text, with no rule under it
    with pytest.raises(Malformed, match=r"line 2: expected a line of '=' under the title"):
        seed_results(block[:2])
    with pytest.raises(Malformed, match=r"line 7: cannot read 'TTFT"):
        seed_results([*block[:5], block[5], block[5], *block[6:]])  # TTFT twice
    with pytest.raises(Malformed, match="the results block has no TTFT, TPOT line"):
        seed_results([*block[:5], *block[7:]])
