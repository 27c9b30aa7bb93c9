"""00_plan's, 01_download's and 04_compare's results typed: stored runs load and dump
byte-equal; a table row keeps the columns its model does not name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from benchlib.runs import (
    STEP_COMPARE,
    STEP_DOWNLOAD,
    STEP_PLAN,
    CompareResult,
    ReferenceRow,
    StepKey,
    VariantRow,
)

DATA = Path(__file__).resolve().parents[2] / "data"
STORED = [DATA / "h200_run" / "h200-llamacpp" / "bf16",
          DATA / "h200_memory" / "h200-memory" / "qwen3-30b-a3b"]


def _same(dumped: object, data: object) -> bool:
    """Equal as JSON text (an int read into a float field would print 6.0, not 6)."""
    return json.dumps(dumped, sort_keys=True) == json.dumps(data, sort_keys=True)


@pytest.mark.parametrize("folder", STORED, ids=lambda p: p.name)
@pytest.mark.parametrize("key", [STEP_PLAN, STEP_DOWNLOAD], ids=str)
def test_stored_results_load_and_dump_byte_equal(folder: Path, key: StepKey[BaseModel]
                                                 ) -> None:
    data = json.loads((folder / ".results" / f"{key}.json").read_text())
    assert _same(key.model.model_validate(data).model_dump(mode="json", exclude_unset=True),
                 data)


def test_a_comparisons_rows_keep_their_other_columns() -> None:
    data = json.loads((DATA / "h200_run" / "h200-llamacpp" / ".results" /
                       f"{STEP_COMPARE}.json").read_text())
    compared = CompareResult.model_validate(data)
    assert _same(compared.model_dump(mode="json", exclude_unset=True), data)
    row = VariantRow.model_validate({"variant": "a", "speedup": 1.5, "median_tpot_ms": 2.0})
    assert row.speedup == 1.5 and row.model_extra == {"median_tpot_ms": 2.0}


def test_a_references_facts_are_named_once() -> None:
    row = ReferenceRow(reference="r", metric="per_user_tok_s", engine="vLLM")
    assert {k: getattr(row, k) for k in ReferenceRow.FACTS}["engine"] == "vLLM"
    assert set(ReferenceRow.FACTS) <= set(ReferenceRow.model_fields)
