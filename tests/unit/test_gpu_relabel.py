"""tools/gpu_relabel.py: a GPU recipe relabelled for the card the device tool lent plans
that card and admits it, loads as a recipe, and says so in its hardware notes; the plan's own
card, a card the catalogue lacks, and a recipe without ``plan.gpu`` are left as they are."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

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
