"""The memory plan against vLLM 0.26.0 live on an H200 (tests/data/h200_memory): each
start-only run's engine log and /metrics figures set beside the plan 02_launch computes for
that engine's settings, within 1 % on weights, KV budget and KV tokens.

Which runs may tune the overhead model and which only test it was committed before the runs
were made (tests/data/h200_memory/shapes.json). The one term the plan took from a run (the
non-torch memory and the V1 runner's CUDA-graph estimate, benchlib.memory.MEASURED) comes
from a run in the fit set; the activation peak is derived from vLLM's source, not fitted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlib.engines import parse_engine_log
from benchlib.memory import MEASURED, PlanConfig, plan
from benchlib.pipeline.steps._engine_vs_plan import compare_engine_to_plan
from benchlib.recipe import load_recipe, resolve_paths

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data" / "h200_memory"
SHAPES = json.loads((DATA / "shapes.json").read_text())
#: the kept runs: shape → (recipe, variant, run folder). h200-memory: start-only, default
#: settings; h200-vllm-short: the short visit's run, --enforce-eager (no CUDA-graph estimate)
RUNS = {
    "qwen3-30b-a3b": ("h200-memory", "qwen3-30b-a3b"),
    "qwen3-8b": ("h200-vllm-short", "vllm-nospec"),
}
STARTED = sorted(shape for shape, (name, variant) in RUNS.items()
                 if (DATA / name / variant / "engine.log").is_file())


def _run(shape: str) -> tuple[Any, Path]:
    """The variant's recipe as it ran, and its kept run folder."""
    name, variant = RUNS[shape]
    recipe = resolve_paths(load_recipe(REPO / "params" / f"{name}.yaml"), REPO)
    return dict(recipe.variant_recipes())[variant], DATA / name / variant


def test_the_split_is_committed_and_every_run_belongs_to_one_side() -> None:
    fit, held = set(SHAPES["fit"]), set(SHAPES["held_apart"])
    assert not fit & held and len(held) >= 3
    assert set(STARTED) <= fit | held and STARTED and set(STARTED) == set(RUNS)
    assert set(STARTED) & held, "at least one live run only tests the overhead model"
    # what the plan took from a run names a run of the fit set
    for term in MEASURED.values():
        assert "Qwen3-30B-A3B" in str(term["source"]) and "qwen3-30b-a3b" in fit


@pytest.mark.parametrize("shape", SHAPES["held_apart"])
def test_each_held_apart_shape_tests_measured(shape: str) -> None:
    """MEASURED came from a fit-set run; only held-apart runs test it. A held-apart shape
    whose run is not stored yet says so (make test lists the skip) instead of passing."""
    if shape not in STARTED:
        pytest.skip(f"held-apart shape {shape} has no stored run in tests/data/h200_memory "
                    "(a GPU run): MEASURED is not yet held to it")
    assert shape not in SHAPES["fit"]  # its 1 % check: test_plan_within_one_percent_…


@pytest.mark.parametrize("variant", STARTED)
def test_plan_within_one_percent_of_the_live_engine(variant: str) -> None:
    recipe, folder = _run(variant)
    log = (folder / "engine.log").read_text()
    kept = json.loads((folder / "02_launch.json").read_text())["results"]["plan_vs_engine"]
    blocks = next(r["engine"] for r in kept["rows"] if r["figure"] == "kv_blocks")
    cache = {"block_size": str(kept["settings"]["block_size"]), "num_gpu_blocks": str(blocks)}
    assert recipe.model.local_path is not None
    result = compare_engine_to_plan(recipe, recipe.model.local_path,
                                    parse_engine_log(log).as_dict(), log_text=log,
                                    cache_config=cache)
    rows = {r.figure: r for r in result.rows}
    for figure in ("weights_gib", "kv_budget_gib", "kv_cache_tokens", "kv_blocks"):
        diff = rows[figure].diff_pct
        assert diff is not None and abs(diff) < 1.0, (variant, figure, rows[figure])
    # vLLM's own breakdown beside the plan's parts: what the engine ran at, and the peak
    assert rows["gpu_memory_utilization"].engine == rows["gpu_memory_utilization"].plan == 0.92
    peak = rows["activation_peak_gib"]
    assert peak.engine is not None and peak.plan is not None
    assert abs(peak.engine - peak.plan) < 0.01 * float(rows["kv_budget_gib"].plan or 0)
    assert not any(r.flagged for r in result.rows), [r for r in result.rows if r.flagged]


def test_a_draft_model_counts_its_weights_and_kv_layers(tmp_path: Path) -> None:
    """The vllm-draft variant of params/h200-vllm-llamacpp.yaml on the H200: its 02_launch
    printed weights 17.73 GiB, KV budget 106.4 GiB and 820,096 tokens (the console; the run
    folder was lost with the machine, docs/gpu-run.md). No term was fitted on it. Before the
    drafter was planned, the plan said 14.96 GiB (+18.5 % on the engine) and 895,472
    tokens (−8.4 %)."""
    import sys

    sys.path.insert(0, str(REPO / "tools"))
    from gpu_models import LLAMA3_8B

    (tmp_path / "t").mkdir()
    (tmp_path / "d").mkdir()
    (tmp_path / "t" / "config.json").write_text(json.dumps(LLAMA3_8B))
    (tmp_path / "d" / "config.json").write_text(json.dumps({**LLAMA3_8B,
                                                            "num_hidden_layers": 2}))
    p = plan(PlanConfig(model=tmp_path / "t", gpu="H200", vllm_version="0.26.0",
                        max_model_len=1024, speculative="draft", draft_model=tmp_path / "d"))
    assert p.overhead.runner == "v1"
    assert p.weights.per_gpu_gib == pytest.approx(17.73, rel=0.01)
    assert p.kv_budget_gib == pytest.approx(106.4, rel=0.01)
    assert p.kv_cache_tokens == pytest.approx(820_096, rel=0.01)


def test_glm_47_flash_cuda_graph_estimate_follows_the_mla_split_buffer() -> None:
    """GLM-4.7-Flash (MLA + MoE, fit set; visit 4, 2026-12-04): vLLM's CUDA-graph estimate
    is 1.64 GiB where a single measured constant (0.64, from Qwen3-30B-A3B) put the KV budget
    1.6 % off. Read from 0.26.0's source, the estimate is dominated by FlashAttention's split
    buffer, whose head size under MLA is kv_lora_rank (512): the plan's 1.39 GiB leaves 0.25
    GiB that the source does not split (no constant fitted to this run), and the KV budget
    comes within 1 %."""
    recipe = dict(resolve_paths(load_recipe(REPO / "params" / "h200-memory.yaml"),
                                REPO).variant_recipes())["glm-4.7-flash"]
    folder = DATA / "h200-memory" / "glm-4.7-flash"
    log = (folder / "engine.log").read_text()
    assert recipe.model.local_path is not None
    result = compare_engine_to_plan(recipe, recipe.model.local_path,
                                    parse_engine_log(log).as_dict(), log_text=log)
    rows = {r.figure: r for r in result.rows}
    for figure in ("weights_gib", "activation_peak_gib"):
        assert abs(rows[figure].diff_pct or 99) < 0.5, rows[figure]
    graphs, budget = rows["cuda_graph_estimate_gib"], rows["kv_budget_gib"]
    assert graphs.engine == 1.64 and graphs.plan is not None
    assert graphs.plan == pytest.approx(2 * 32 * 20 * 512 * 513 * 4 / 1024**3 + 0.136)
    assert not graphs.flagged  # 0.25 GiB: under 1 % of the budget
    assert budget.plan is not None and budget.engine is not None
    assert abs(budget.diff_pct or 99) < 1.0 and not budget.flagged
    assert abs((budget.plan - budget.engine) - (graphs.engine - graphs.plan)) < 0.15
