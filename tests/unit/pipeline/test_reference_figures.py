"""A run's own figures beside the published ones, read from a run folder: a long-context
ramp's reach (seed 003) and SGLang's few_shot_gsm8k figures (seed 001), each under its
reference's key with its unit."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.accuracy import FewShotResult
from benchlib.pipeline import RunFolder
from benchlib.pipeline.steps._references import references_table
from benchlib.recipe import load_recipe, resolve_paths


def save_results(path: Path, data: object) -> None:
    """A results file as a notebook leaves it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))

REPO = Path(__file__).resolve().parents[3]
SEEDS = REPO / "params" / "seeds"


def test_ramp_reach_and_start_up_stand_beside_seed_003s(tmp_path: Path) -> None:
    recipe = resolve_paths(load_recipe(SEEDS / "003-qwen38-27b-cmp170hx.yaml"), REPO)
    run = RunFolder(path=tmp_path)
    vllm = run.variant("vllm-dflash2-k7")
    save_results(vllm.results("02_launch"), {"startup_s": 440.0})
    save_results(vllm.results("03_measure"), {"long-context/ramp": {
        "scenario": "long-context", "kind": "ramp", "max_completed_input_len": 6603,
        "failed_at_input_len": 9472, "steps": []}})
    table = references_table(recipe, tmp_path)
    assert table is not None
    rows = table[table["reference"] == "vllm-dflash2-long-context"].set_index("metric")
    assert rows.loc["max_completed_input_len", "measured"] == 6603
    assert rows.loc["failed_at_input_len", "measured_over_published"] == 1.0
    assert set(rows["unit"]) == {"tokens"}
    openjet = table[table["reference"] == "openjet-mtp-d4-long-context"]
    assert openjet["measured"].isna().all()  # that variant has not run


def test_few_shot_gsm8k_stands_beside_seed_001s(tmp_path: Path) -> None:
    recipe = resolve_paths(load_recipe(SEEDS / "001-glm47-flash-sglang-b200.yaml"), REPO)
    run = RunFolder(path=tmp_path)
    few = FewShotResult(endpoint="/v1/completions", n=200, num_shots=5, max_tokens=512,
                        parallel=64, accuracy=0.84, invalid=0.005, latency_s=10.0,
                        output_tokens=20000, output_throughput=2000.0, failed=0,
                        samples="few_shot_gsm8k.jsonl")
    save_results(run.variant("sglang").results("03_measure"),
                 {"accuracy/few_shot_gsm8k": few.model_dump()})
    table = references_table(recipe, tmp_path)
    assert table is not None
    rows = table[table["reference"] == "sglang-few-shot-gsm8k"].set_index("metric")
    assert rows.loc["gsm8k_accuracy", "measured"] == 0.84
    assert rows.loc["gsm8k_accuracy", "published"] == 0.845
    assert rows.loc["gsm8k_latency_s", "unit"] == "s"
    assert rows.loc["gsm8k_output_throughput", "measured"] == 2000.0
