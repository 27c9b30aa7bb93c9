"""A run folder read typed for the report: the recipe, each variant's results, the
comparison; a folder that is no run is said."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib._exceptions import UsageError
from benchlib.report._view import read_run
from tests.unit.report._run import make_run


def test_a_run_read_typed(tmp_path: Path) -> None:
    view = read_run(make_run(tmp_path))
    assert [v.name for v in view.variants] == ["vllm-ngram", "llamacpp"]
    first = view.variants[0]
    assert first.launch is not None and first.launch.startup_s == 30.0
    assert first.plan is not None and first.plan.plan is not None
    assert first.plan.plan.decode_floor_ms == 0.5 and first.provenance["kit_commit"] == "abc"
    found = [(v.label, s, c) for v, s, c, _ in view.measurements()]
    assert found[:2] == [("vllm-ngram", "chat", 1), ("vllm-ngram", "chat", 4)]
    assert view.compare is not None and view.compare.references[0].reference == "seed"


def test_a_folder_without_a_recipe_is_no_run(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a run folder"):
        read_run(tmp_path)
