"""Recipes: every malformed file is refused with exit 2 and the key path named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.recipe import RecipeError, load_recipe

REPO = Path(__file__).resolve().parents[3]

GOOD = """\
name: t
model: {id: org/m, revision: "0123456"}
engine: {kind: endpoint, base_url: "http://127.0.0.1:9"}
scenarios:
  - {name: chat, input_len: 8, output_len: 4, concurrencies: [1, 2], num_prompts: [2, 4]}
"""


def check(tmp_path: Path, text: str | None) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "r.yaml"
    if text is not None:
        path.write_text(text)
    return subprocess.run([sys.executable, "-m", "benchlib", "run", str(path), "--check"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)


def test_demo_and_good_recipes_pass(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", "params/demo.yaml",
                           "--check"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert check(tmp_path, GOOD).returncode == 0
    chat = load_recipe(REPO / "params" / "demo.yaml").scenarios[0]
    assert (chat.prompts_at(0), chat.prompts_at(1)) == (3, 4)


@pytest.mark.parametrize("text,expected", [
    (GOOD.replace("revision: \"0123456\"", "revision: 0123456"), "model.revision: must be a string"),
    (GOOD.replace("kind: endpoint", "kind: endpoint, version: 1.10"), "engine.version: must be a string"),
    (GOOD.replace("name: t", "name: t\nscenaros: []"), "scenaros: unknown key"),
    (GOOD.replace("input_len: 8", "input_len: 8, outptu_len: 3"), "scenarios[0].outptu_len: unknown key"),
    (GOOD.replace("model: {id: org/m,", "model: {id: org/m, extra: {deep: 1},"), "model.extra: unknown key"),
    (GOOD.replace("concurrencies: [1, 2]", "concurrencies: [0, 2]"), "scenarios[0].concurrencies[0]"),
    (GOOD.replace("input_len: 8", "input_len: -3"), "scenarios[0].input_len"),
    (GOOD.replace("input_len: 8", "input_len: many"), "scenarios[0].input_len"),
    (GOOD.replace("num_prompts: [2, 4]", "num_prompts: [2]"), "num_prompts lists 1 counts"),
    (GOOD.replace("input_len: 8", "input_len: 8, workers: 2"), "workers 2: a measurement here has only 1"),
    (GOOD.replace("kind: endpoint", "kind: vlm"), "engine.kind"),
    (GOOD.replace(', base_url: "http://127.0.0.1:9"', ""), "needs engine.base_url"),
    (GOOD.replace("kind: endpoint", "kind: endpoint, env: {HF_TOKEN: abc}"), "must not hold secrets"),
    (GOOD.replace("kind: endpoint", "kind: endpoint, args: [--api-key, sk-literal]"), "write --api-key ${NAME}"),
    (GOOD.replace("kind: endpoint", "kind: endpoint, args: [--api-key=sk-literal]"), "write --api-key=${NAME}"),
    (GOOD.replace("kind: endpoint", "kind: endpoint, nice: {VLLM::EngineCore: 10}"), "engine.nice: the kit starts no process"),
    (GOOD.replace("kind: endpoint,", "kind: vllm, nice: {VLLM::EngineCore: 25},"), "engine.nice.VLLM::EngineCore"),
    (GOOD.replace("kind: endpoint,", "kind: scripted, lock: no-such.lock,"),
     "engine.lock: " + str(REPO / "no-such.lock") + ": cannot be read"),
    (GOOD.replace("kind: endpoint,", "kind: scripted, lock: params/demo.yaml,"),
     "engine.lock: " + str(REPO / "params" / "demo.yaml") + ", line "),
    (GOOD.replace("kind: endpoint,", "kind: endpoint, lock: r.lock,"),
     "engine.lock: an endpoint is no Python environment"),
    ("name: t\nmodel: [1, 2", "not valid YAML"),
    ("", "expected a mapping of keys, got empty"),
    ("- a\n- b\n", "expected a mapping of keys, got a list"),
    (None, "no such file"),
])
def test_bad_recipes_exit_2_naming_the_key(tmp_path: Path, text: str | None,
                                           expected: str) -> None:
    proc = check(tmp_path, text)
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    text = GOOD.replace("revision: \"0123456\"", "revision: 83").replace("input_len: 8",
                                                                         "input_len: 0, x: 1")
    (tmp_path / "r.yaml").write_text(text)
    with pytest.raises(RecipeError) as info:
        load_recipe(tmp_path / "r.yaml")
    keys = [k for k, _ in info.value.problems]
    assert {"model.revision", "scenarios[0].input_len", "scenarios[0].x"} <= set(keys)


def test_run_without_check_refuses_too(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("name: t\n")
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(path), "--outputs",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO,
                          timeout=60)
    assert proc.returncode == 2 and "model: Field required" in proc.stderr
    assert not (tmp_path / "out").exists()
