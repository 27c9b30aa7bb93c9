"""``benchlib import FILE [--json]``: the table by default, the JSON list with --json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.cli import import_

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchlib")
    sub = parser.add_subparsers(dest="command", required=True)
    import_.register(sub)
    return parser.parse_args(["import", *argv])


def test_json_is_a_list_of_results(capsys: pytest.CaptureFixture[str]) -> None:
    args = _args(str(DATA / "vllm_console_benchmark_serving.txt"), "--json")
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out, list) and len(out) == 2
    assert out[0]["source_format"] == "vllm-console"
    assert out[0]["p99_ttft_ms"] == 10999.46 and out[0]["failed"] is None
    assert out[1]["max_concurrency"] == 64 and out[1]["request_rate"] == "inf"


def test_the_table_shows_the_main_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    args = _args(str(DATA / "sglang_console_blog_seed001.txt"))
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{DATA / 'sglang_console_blog_seed001.txt'}: 2 results")
    rows = {line.split("  ")[0]: line.split() for line in out.splitlines() if line}
    assert rows["result"][-2:] == ["#0", "#1"]
    assert rows["TTFT mean ms"][-2:] == ["131.36", "299.02"]
    assert rows["failed"][-2:] == ["-", "-"]


def test_a_file_of_no_format_is_a_usage_error(tmp_path: Path) -> None:
    garbage = tmp_path / "notes.txt"
    garbage.write_text("nothing to see here\n")
    args = _args(str(garbage))
    with pytest.raises(UsageError, match=r"notes\.txt: no benchmark result found") as err:
        args.func(args)
    assert err.value.exit_code == 2
