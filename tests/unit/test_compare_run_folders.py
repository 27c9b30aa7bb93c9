"""tools/compare_run_folders.py: two run folders field by field, what a re-run changes left
out; a key, a JSON type or a text that differs is named."""

from __future__ import annotations

import json
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "compare_run_folders.py"
sys.path.insert(0, str(TOOL.parent))

import compare_run_folders as crf  # noqa: E402


def _folder(root: Path, record: dict[str, object]) -> Path:
    (root / ".results").mkdir(parents=True)
    (root / ".results" / "03_measure.json").write_text(json.dumps({"chat/c1": record}))
    (root / "run.json").write_text(json.dumps({"finished": True, "recipe_sha256": str(root)}))
    return root


def test_a_rerun_differs_in_nothing_but_what_it_always_changes(tmp_path: Path) -> None:
    before = _folder(tmp_path / "a", {"completed": 4, "median_tpot_ms": 2.0, "date": "1"})
    after = _folder(tmp_path / "b", {"completed": 4, "median_tpot_ms": 2.5, "date": "2"})
    assert crf.compare_folders(before, after) == []
    assert crf.main([str(before), str(after)]) == 0


def test_a_key_a_type_or_a_text_that_differs_is_named(tmp_path: Path) -> None:
    before = _folder(tmp_path / "a", {"completed": 4, "endpoint_type": "chat", "knee": 6})
    after = _folder(tmp_path / "b", {"completed": 4, "endpoint_type": "completions",
                                     "knee": 6.0, "sdk": None})
    (after / "report.json").write_text("{}")
    found = crf.compare_folders(before, after)
    assert found == [
        "~ .results/03_measure.json.chat/c1.endpoint_type: 'chat' before, 'completions' after",
        "~ .results/03_measure.json.chat/c1.knee: int 6 before, float 6.0 after",
        "+ .results/03_measure.json.chat/c1.sdk (only after)",
        "+ report.json (only after)"]
    assert crf.main([str(before), str(after)]) == 1


def test_a_control_rerun_leaves_out_what_the_measurement_changes(tmp_path: Path) -> None:
    before = _folder(tmp_path / "a", {"completed": 4, "caveats": ["client-bound"], "x": "a"})
    control = _folder(tmp_path / "c", {"completed": 4, "caveats": ["none"], "x": "a"})
    after = _folder(tmp_path / "b", {"completed": 4, "caveats": ["other"], "x": "b"})
    found = crf.compare_folders(before, after)
    kept, noise = crf.without_rerun_noise(found, crf.compare_folders(before, control))
    # the caveat moves in the control re-run too: the measurement's; x moves only after
    assert noise == 1
    assert kept == ["~ .results/03_measure.json.chat/c1.x: 'a' before, 'b' after"]
    assert crf.main([str(before), str(after), "--control", str(control)]) == 1
    assert crf.main([str(before), str(before), "--control", str(control)]) == 0


def test_a_folder_that_is_not_a_run_is_refused_with_exit_2(tmp_path: Path) -> None:
    before = _folder(tmp_path / "a", {"completed": 4})
    assert crf.main([str(before), str(tmp_path / "missing")]) == 2


def test_a_field_is_the_same_whichever_variant_scenario_or_position_it_is_at() -> None:
    assert crf.field_of("~ v1/measure/chat-c4.json.timing.x[3]: 1") == \
        crf.field_of("~ v2/measure/random-c1.json.timing.x[0]: 2") == "*/measure/*.json.timing.x[]"
    assert crf.field_of("+ v2/.results/03_measure.json.random/c1.timing.x (only after)") == \
        crf.field_of("- v1/.results/03_measure.json.chat/c4.timing.x (only before)")
    # what is not a measurement's place stays apart
    assert crf.field_of("~ recipe.json.engine.python: a") != \
        crf.field_of("~ v1/recipe.json.engine.python: a")
    assert crf.field_of("~ 04_compare.json.results.variants[2].caveats: a") == \
        "04_compare.json.results.variants[].caveats"
