"""Formats told apart by content; anything else is a UsageError (exit 2) naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.importers import import_results, parse_results

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"
FORMATS = {
    "vllm_console_benchmark_serving.txt": "vllm-console",
    "vllm_console_serve_2025.txt": "vllm-console",
    "vllm_console_serve_2026.txt": "vllm-console",
    "vllm_result.json": "vllm-json",
    "sglang_console_2025.txt": "sglang-console",
    "sglang_console_blog_seed001.txt": "sglang-console",
    "sglang_output.jsonl": "sglang-jsonl",
    "guidellm_benchmarks.json": "guidellm-json",
    "aiperf_profile_export.json": "aiperf-json",
    "aiperf_profile_export_records.json": "aiperf-json",
    "seed000_console.txt": "seed000-console",
    "seed000_blog_excerpt.txt": "seed000-console",
}


def test_every_fixture_is_here() -> None:
    assert {p.name for p in DATA.iterdir()} == set(FORMATS)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_content_decides_not_the_name(name: str, tmp_path: Path) -> None:
    renamed = tmp_path / "results.dat"
    shutil.copy(DATA / name, renamed)
    results = import_results(renamed)
    assert {r.source_format for r in results} == {FORMATS[name]}
    assert [r.source_index for r in results] == list(range(len(results)))
    assert {r.source_file for r in results} == {str(renamed)}
    json.dumps([r.to_json() for r in results], allow_nan=False)  # valid JSON


def test_one_log_with_several_tools_keeps_file_order() -> None:
    text = "\n".join((DATA / name).read_text() for name in (
        "sglang_console_2025.txt", "seed000_console.txt", "vllm_console_serve_2025.txt"))
    results = parse_results(text, "mixed.log")
    assert [r.source_format for r in results] == [
        "sglang-console", "seed000-console", "seed000-console", "vllm-console"]


def test_a_log_starting_with_a_bracket_is_still_a_log() -> None:
    text = "[2026-01-14 09:32:12] starting\n" + (DATA / "vllm_console_serve_2026.txt").read_text()
    [r] = parse_results(text, "bracket.log")
    assert r.source_format == "vllm-console"


@pytest.mark.parametrize("text,message", [
    ("INFO vLLM API server version 0.11.0\nINFO Started server process\n",
     "no benchmark result found; expected a 'vllm bench serve'"),
    ("", "no benchmark result found"),
    ('{"completed": 3', "not valid JSON: Expecting"),
    ('{"completed": 3}\n{"oops"\n', "line 2: not valid JSON"),
    ('{"model": "x", "score": 1}', "a JSON object of no known format \\(keys: model, score\\)"),
    ("[1, 2]", "\\[0\\]: expected a JSON object, found int"),
    ("[]", "no benchmark result found"),
])
def test_garbage_is_a_usage_error_naming_the_file(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as err:
        parse_results(text, "garbage.txt")
    assert err.value.exit_code == 2
    assert str(err.value).startswith("garbage.txt: ")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"missing\.json: cannot read the file") as err:
        import_results(tmp_path / "missing.json")
    assert err.value.exit_code == 2
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\xff\xfe\x00\x81garbage")
    with pytest.raises(UsageError, match=r"model\.bin: not UTF-8 text"):
        import_results(binary)


def test_error_messages_say_where_and_what_in_full() -> None:
    """The whole message, since a user acts on it: the line and column of bad JSON Lines, the
    first eight keys of an unknown object (an ellipsis only past eight), the OS's reason."""
    def message(text: str) -> str:
        with pytest.raises(UsageError) as err:
            parse_results(text, "g.txt")
        return str(err.value)

    assert message('{"completed": 3}\n{"oops"\n') == (
        "g.txt: line 2: not valid JSON (Expecting ':' delimiter, column 8); expected one JSON "
        "document, or one JSON object per line")
    nine = message(json.dumps({k: 1 for k in "abcdefghi"}))
    assert nine.startswith("g.txt: the file: a JSON object of no known format (keys: a, b, c, "
                           "d, e, f, g, h, …); expected a 'vllm bench serve'")
    eight = message(json.dumps({k: 1 for k in "abcdefgh"}))
    assert "(keys: a, b, c, d, e, f, g, h); expected" in eight


def test_a_json_file_may_start_with_blank_lines() -> None:
    text = "\n  \n" + (DATA / "vllm_result.json").read_text()
    [r] = parse_results(text, "r.json")
    assert r.source_format == "vllm-json"


def test_an_unreadable_file_gives_the_os_reason(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        import_results(tmp_path / "missing.json")
    assert str(err.value) == (f"{tmp_path / 'missing.json'}: cannot read the file "
                              "(No such file or directory)")


def test_a_bad_value_in_a_single_sglang_document_is_named_by_its_key() -> None:
    """One JSON document: no line or index before the key."""
    obj = json.loads((DATA / "sglang_output.jsonl").read_text().splitlines()[0])
    with pytest.raises(UsageError) as err:
        parse_results(json.dumps({**obj, "backend": 5}), "g.txt")
    assert str(err.value) == "g.txt: backend: 5 is not text"


def test_a_result_the_model_refuses_is_named_by_file_and_index() -> None:
    """The importers let a stat-like key through to the model, which refuses one that is no
    percentile (here with a trailing newline, which ``$`` lets match): the file stays the
    error's field, the result's index starts the message."""
    good = {"completed": 1, "duration": 1.5}
    text = json.dumps(good) + "\n" + json.dumps({**good, "mean_ttft_ms\n": 2.5}) + "\n"
    with pytest.raises(UsageError) as err:
        parse_results(text, "r.jsonl")
    assert (err.value.field, err.value.message) == (
        "r.jsonl", "result 1: unknown key 'mean_ttft_ms\\n': not a p{P}_{metric}_ms percentile")


@pytest.mark.parametrize(("text", "message"), [
    ('{"completed": 1' + "0" * 5000 + ', "duration": 1}',
     "a number in the JSON has too many digits to read"),
    ('{"completed": 1, "duration": 1}\n[1' + "0" * 5000 + "]\n",
     "line 2: a number in the JSON has too many digits to read"),
    ("[" * 100_000 + "]" * 100_000, "the JSON is nested too deeply to read"),
    ('{"completed": 1, "duration": 1}\n' + "[" * 100_000 + "]" * 100_000,
     "line 2: the JSON is nested too deeply to read"),
])
def test_json_python_cannot_hold_is_malformed_not_a_crash(text: str, message: str) -> None:
    """An integer past Python's digit limit, or nesting past its recursion limit, is a
    UsageError naming the file (and the line of a JSON Lines file), not a traceback."""
    with pytest.raises(UsageError) as err:
        parse_results(text, "big.json")
    assert str(err.value) == f"big.json: {message}"
