"""tools/gpu_relabel.py: a GPU recipe relabelled for the card the device tool lent plans
that card and admits it, loads as a recipe, and says so in its hardware notes; the plan's own
card, a card the catalogue lacks, a card described by hand and a recipe without ``plan.gpu``
are left as they are; the copy is the same whatever memory NVML reports, and ``main`` prints
the path to run."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import yaml

from benchlib.memory import find_gpu
from benchlib.recipe import load_recipe
from tests._tools import load_tool

REPO = Path(__file__).resolve().parents[2]
COMPARE = REPO / "params" / "h200-vllm-llamacpp.yaml"
H100 = ("NVIDIA H100 80GB HBM3", 79.6)


def _tool() -> ModuleType:
    return load_tool("gpu_relabel")


def _doc() -> dict[str, Any]:
    doc = yaml.safe_load(COMPARE.read_text())
    assert isinstance(doc, dict)
    return doc


def test_an_h100_lent_for_the_h200_recipe_is_planned_and_admitted(tmp_path: Path) -> None:
    new = _tool().relabel(_doc(), *H100)
    assert new is not None
    assert new["plan"]["gpu"] == "H100-SXM"
    assert new["plan"]["decode_batch"] == _doc()["plan"]["decode_batch"]  # the rest kept
    hardware = new["hardware"]
    assert re.fullmatch(hardware["gpu_name_pattern"], H100[0])
    assert hardware["min_gpu_memory_gib"] <= H100[1]
    assert "relabelled for the lent NVIDIA H100 80GB HBM3" in hardware["notes"]
    assert "the committed recipe names H200" in hardware["notes"]
    assert new["description"].startswith(_doc()["description"])  # the title names the card
    assert new["description"].endswith("[run on a lent H100-SXM, planned for it; the recipe "
                                       "names H200]")
    path = _tool().relabelled_path(tmp_path / "h200-vllm-llamacpp.yaml")
    assert path.name == "h200-vllm-llamacpp.lent.yaml"
    path.write_text(yaml.safe_dump(new, sort_keys=False))
    recipe = load_recipe(path)  # a recipe the run accepts, planned for the card it got
    assert find_gpu(str(recipe.plan["gpu"])).bandwidth_gbs == 3350
    assert recipe.name == _doc()["name"]  # the same run folder's name


def test_the_plans_own_card_an_unknown_one_and_no_plan_gpu_are_left_alone() -> None:
    tool = _tool()
    assert tool.relabel(_doc(), "NVIDIA H200", 139.8) is None
    assert tool.relabel(_doc(), "NVIDIA GeForce RTX 9999", 20.0) is None
    doc = _doc()
    del doc["plan"]["gpu"]
    assert tool.relabel(doc, *H100) is None


def test_notes_already_there_are_kept() -> None:
    doc = _doc()
    doc["hardware"]["notes"] = "power capped at 600 W"
    new = _tool().relabel(doc, *H100)
    assert new is not None
    assert new["hardware"]["notes"].startswith("power capped at 600 W; relabelled for")


def test_a_card_described_by_hand_or_unknown_to_the_catalogue_is_left_alone() -> None:
    tool = _tool()
    doc = _doc()
    doc["plan"]["gpu_bandwidth_gbs"] = 4000
    assert tool.relabel(doc, *H100) is None
    doc = _doc()
    doc["plan"]["gpu"] = "B9000"  # the recipe's own check names it; no traceback here
    assert tool.relabel(doc, *H100) is None


def test_the_note_is_the_same_whatever_memory_nvml_reports() -> None:
    """Both halves of a run in parts relabel on their own and must write one recipe."""
    tool = _tool()
    assert tool.relabel(_doc(), H100[0], 79.6) == tool.relabel(_doc(), H100[0], 79.7)


def test_main_prints_the_path_to_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Its last line of output is the recipe to run: the copy beside the recipe on an H100,
    the recipe itself where no GPU is found."""
    import benchlib.provenance

    recipe = tmp_path / COMPARE.name
    shutil.copy(COMPARE, recipe)
    gpus: list[SimpleNamespace] = [SimpleNamespace(name=H100[0], memory_total_gib=H100[1])]
    monkeypatch.setattr(benchlib.provenance, "collect_hardware",
                        lambda: SimpleNamespace(gpus=gpus))
    assert _tool().main([str(recipe)]) == 0
    copy = Path(capsys.readouterr().out.splitlines()[-1])
    assert copy == tmp_path / "h200-vllm-llamacpp.lent.yaml"
    assert load_recipe(copy).plan["gpu"] == "H100-SXM"
    gpus.clear()
    assert _tool().main([str(recipe)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == str(recipe)
