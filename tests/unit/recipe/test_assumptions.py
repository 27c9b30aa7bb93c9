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


def test_a_difference_is_named_as_one_and_dotted_names_are_found() -> None:
    from benchlib.recipe import Assumption
    from benchlib.recipe._assumptions import check_assumptions

    a = Assumption(setting="variants.kimi-k2.6-int4-text.model.local_path", value="text only",
                   why="the post served the whole model", kind="differs")
    assert a.caveat.startswith("differs from the source: variants.kimi-k2.6-int4-text")
    assert a.applies("kimi-k2.6-int4-text", "x") and not a.applies("kimi-k2.6-int4", "x")
    check_assumptions([a], [], ["kimi-k2.6-int4-text"], ["variants"])
    with pytest.raises(ValueError, match="names no variant"):
        check_assumptions([a], [], ["kimi-k2.6-int4"], ["variants"])


def _recipes() -> list[Path]:
    return sorted(p for p in (REPO / "params").rglob("*.yaml")
                  if "references" not in p.parts and "data" not in p.parts
                  and "writeups" not in p.parts and "models" not in p.parts)


@pytest.mark.parametrize("path", _recipes(), ids=lambda p: str(p.relative_to(REPO)))
def test_each_variants_own_recipe_is_a_valid_recipe(path: Path) -> None:
    """The runner validates each variant's own recipe again (its engine and model, no
    variants): an assumption naming a variant must read there as that recipe's own path,
    and another variant's must not be there (on the H200 a `variants.X.…` assumption stopped
    seed 003's run before its first step)."""
    recipe = load_recipe(path)
    for name, own in recipe.variant_recipes():
        again = Recipe.model_validate(own.model_dump(by_alias=True))
        assert not any(a.setting.startswith("variants.") for a in again.assumptions), name


def test_a_variants_assumption_reads_as_its_own_recipes_path() -> None:
    a = Assumption(setting="variants.v.speculative.draft_model", value="d", why="w")
    star = Assumption(setting="variants.*.model.id", value="m", why="w")
    assert a.for_variant("v") == a.model_copy(update={"setting": "engine.speculative.draft_model"})
    assert a.for_variant("w") is None
    assert star.for_variant("w") == star.model_copy(update={"setting": "model.id"})
    top = Assumption(setting="scenarios.s.input_len", value="1", why="w")
    assert top.for_variant("v") is top


def test_unknown_names_are_refused_with_the_names_the_recipe_has() -> None:
    """The message lists the recipe's scenarios (or variants), sorted, or says none."""
    from benchlib.recipe._assumptions import check_assumptions

    a = Assumption(setting="variants.nope.engine", value="x", why="y")
    with pytest.raises(ValueError) as err:
        check_assumptions([a], [], ["b", "a"], ["variants"])
    assert str(err.value) == ("assumptions[0].setting: 'variants.nope.engine' names no variant "
                              "of the recipe (a, b)")
    with pytest.raises(ValueError) as err:
        check_assumptions([a], ["s"], [], ["variants"])
    assert str(err.value).endswith("names no variant of the recipe (none)")


def test_a_variant_wildcard_shapes_every_variant_and_only_variants() -> None:
    """``variants.*.X`` shapes every variant's rows; with neither a variant nor a scenario
    asked, every caveat is listed; with one asked, only those that shape it."""
    every = Assumption(setting="variants.*.engine", value="x", why="y")
    one = Assumption(setting="variants.a.engine", value="x", why="y")
    assert every.applies("b", "") and every.applies("a", "s")
    assert assumption_caveats([every, one], variant="b") == [every.caveat]
    assert assumption_caveats([every, one], scenario="s") == [every.caveat]
    assert assumption_caveats([every, one]) == [every.caveat, one.caveat]


@pytest.mark.parametrize("path", sorted(SEEDS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_seed_recipe_names_its_departures_on_its_rows(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every seed recipe sets its figures beside the source's (references) and names each
    setting it takes otherwise or on assumption on every row that setting shapes."""
    from benchlib.recipe import resolve_paths

    from ._differs import differs_on_every_row

    monkeypatch.chdir(REPO)
    recipe = resolve_paths(load_recipe(path), REPO)
    assert recipe.assumptions, path.name
    differs_on_every_row(recipe)


def test_seed_003s_lock_and_long_context_endpoint_are_named() -> None:
    """The write-up prints only vLLM's pin of its lock, and sent its 6,603-token request to
    /v1/completions while the recipe's ramp stays on chat: both stand as caveats."""
    recipe = load_recipe(SEEDS / "003-qwen38-27b-cmp170hx.yaml")
    found = {a.setting: a for a in recipe.assumptions}
    assert found["scenarios.long-context.endpoint"].kind == "differs"
    lock = found["variants.vllm-dflash2-k7.engine.lock"]
    assert "vllm==0.27.1 alone" in lock.value
    lines = assumption_caveats(recipe.assumptions, "vllm-dflash2-k7", "long-context")
    assert any("engine.lock" in line for line in lines)
    assert any(line.startswith("differs from the source: scenarios.long-context.endpoint")
               for line in lines)
    assert not any("engine.lock" in line for line in assumption_caveats(
        recipe.assumptions, "openjet-mtp-d4", "long-context"))
