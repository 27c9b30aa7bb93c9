"""What a recipe takes on assumption is marked in it and printed as a caveat: the seed
recipes' gaps (seed 003's lengths, sampling and GGUF repository; seed 001's parallelism), a
path that names nothing refused, and each caveat kept to the rows it shapes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchlib.recipe import Assumption, Recipe, assumption_caveats, load_recipe

REPO = Path(__file__).resolve().parents[3]
SEEDS = REPO / "params" / "seeds"


def test_seed_003_marks_what_its_write_up_does_not_give() -> None:
    recipe = load_recipe(SEEDS / "003-qwen38-27b-cmp170hx.yaml")
    assumed = {a.setting: a for a in recipe.assumptions}
    assert {"scenarios.greedy-5.input_len", "scenarios.thinking-4.input_len",
            "scenarios.thinking-4.sampling", "variants.openjet-mtp-d4.model.id",
            "variants.openjet-mtp-off.model.id"} <= set(assumed)
    assert "512" in assumed["scenarios.greedy-5.input_len"].value
    assert "2048" in assumed["scenarios.thinking-4.input_len"].value
    greedy = next(s for s in recipe.scenarios if s.name == "greedy-5")
    assert (greedy.input_len, greedy.output_len) == (256, 512)
    lines = assumption_caveats(recipe.assumptions, "openjet-mtp-d4", "thinking-4")
    assert any("thinking-4.sampling" in line for line in lines)
    assert any("openjet-mtp-d4.model.id" in line for line in lines)
    assert not any("greedy-5" in line or "openjet-mtp-off" in line for line in lines)


def test_check_prints_every_assumption_as_a_caveat() -> None:
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", "--check",
                           "params/seeds/003-qwen38-27b-cmp170hx.yaml"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    caveats = [line for line in proc.stdout.splitlines() if line.startswith("caveat: ")]
    recipe = load_recipe(SEEDS / "003-qwen38-27b-cmp170hx.yaml")
    assert len(caveats) == len(recipe.assumptions) >= 5
    assert any("assumed, not from the source: scenarios.greedy-5.input_len = 256 prompt "
               "tokens, 512 out" in line for line in caveats)


@pytest.mark.parametrize("setting,says", [("scenarios.nope.input_len", "names no scenario"),
                                          ("variants.nope.model.id", "names no variant"),
                                          ("nonsense.key", "not a recipe key")])
def test_a_path_that_names_nothing_is_refused(setting: str, says: str) -> None:
    data = yaml.safe_load((SEEDS / "003-qwen38-27b-cmp170hx.yaml").read_text())
    data["assumptions"] = [{"setting": setting, "value": "x", "why": "y"}]
    with pytest.raises(ValueError, match=says):
        Recipe.model_validate(data)


def test_an_assumption_applies_to_its_rows() -> None:
    every = Assumption(setting="scenarios.*.sampling", value="t 0", why="w")
    one = Assumption(setting="variants.v.model.id", value="r", why="w")
    top = Assumption(setting="accuracy.concurrency", value="64", why="w")
    assert every.applies("a", "s") and not one.applies("a", "s") and one.applies("v", "s")
    assert top.applies("a", "s")
    assert assumption_caveats([every, one, top]) == [every.caveat, one.caveat, top.caveat]
