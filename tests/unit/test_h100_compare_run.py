"""vLLM and llama.cpp side by side on one GPU, on the same weights (tests/data/h100_compare;
the compare visit of docs/gpu-run.md, 2026-12-07, issue 34): `params/h200-vllm-llamacpp.yaml`
relabelled there by `tools/gpu_relabel.py` for the H100 80GB the device tool lent (its plan
then the H100's). Random Llama-3-8B-shaped BF16 weights made there (safetensors for vLLM 0.26.0
with CUDA graphs and torch.compile, their BF16 GGUF for llama.cpp b11312 CUDA), each engine
with speculation off and on (vLLM n-gram k=4, llama.cpp a 2-layer self-draft k=4), chat 256 in
/ 128 out at concurrency 1, 4, 16 and 64. Read without a GPU: every request answered and
counted by the server, TPOT at or above the H100's decode floor with joules per output token
for every variant, the plan's weights and KV tokens within the kit's 2 % flag of each engine's
(0.60 % at most here), speculation's counters (random weights accept almost nothing: the
report says what that costs), and each engine's own planned capacity beside its
measurements."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchlib.memory import find_gpu
from benchlib.pipeline.steps._variants import variants_table
from benchlib.runs import (
    FLAG_PCT,
    STEP_LAUNCH,
    STEP_MEASURE,
    RunFolder,
    load_recipe_snapshot,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "h100_compare"
RUN = DATA / "h200-vllm-llamacpp"
VARIANTS = ("vllm-nospec", "vllm-ngram", "llamacpp-nospec", "llamacpp-draft")
#: concurrency → requests measured (the recipe's chat scenario)
PROMPTS = {1: 8, 4: 16, 16: 32, 64: 128}
STEPS = ("00_plan", "01_download", "02_launch", "03_measure")
OUTPUT_LEN = 128


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _raw(variant: str, concurrency: int) -> dict[str, Any]:
    results: dict[str, Any] = _json(RUN / variant / "03_measure.json")["results"]
    return dict(results[f"chat/c{concurrency}"])


def _counters(variant: str, concurrency: int) -> dict[str, Any]:
    server = _json(RUN / variant / "measure" / f"chat-c{concurrency}.server.json")
    return dict(server["counters"])


def _plan(variant: str) -> dict[str, Any]:
    return dict(_json(RUN / variant / "00_plan.json")["results"]["plan"])


def test_every_variant_and_the_comparison_finished_on_the_h100_it_was_planned_for() -> None:
    state = _json(RUN / "run.json")
    assert state["finished"] is True
    assert state["statuses"] == {**{f"{v}/{s}": "ok" for v in VARIANTS for s in STEPS},
                                 "04_compare": "ok"}
    recipe = _json(RUN / "recipe.json")
    assert recipe["plan"]["gpu"] == "H100-SXM"
    assert "relabelled for the lent NVIDIA H100 80GB HBM3" in recipe["hardware"]["notes"]
    for variant in VARIANTS:
        for step in STEPS:
            provenance = _json(RUN / variant / f"{step}.json")["provenance"]
            (gpu,) = provenance["hardware"]["gpus"]
            assert gpu["name"] == "NVIDIA H100 80GB HBM3"
            # planned for the card that ran: no step says otherwise
            assert provenance["hardware_mismatches"] == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_request_answered_counted_by_the_server_with_energy(variant: str) -> None:
    measured = RunFolder(path=RUN / variant).result(STEP_MEASURE)
    assert measured is not None
    for concurrency, prompts in PROMPTS.items():
        m = measured.measurement("chat", concurrency)
        assert m is not None and (m.completed, m.failed) == (prompts, 0)
        raw = _raw(variant, concurrency)
        assert raw["output_tokens_source"] == {"usage": prompts, "tokenizer": 0}
        assert raw["total_output_tokens"] == OUTPUT_LEN * prompts
        assert _counters(variant, concurrency)["generation_tokens"] == raw["total_output_tokens"]
        assert m.energy is not None and m.energy.source == "nvml"
        assert m.energy.energy_j_per_output_token is not None
        assert 0.01 < m.energy.energy_j_per_output_token < 20


def test_the_floor_is_the_h100s_and_no_variant_decodes_below_it() -> None:
    """The decode floor: the active weights and the KV of a mean decode context read once per
    step at the H100 SXM's 3.35 TB/s (at the H200's 4.8 it would be 3.1 ms); every median
    TPOT is at or above it, vLLM's without speculation within 2× at concurrency 1."""
    bandwidth = find_gpu("H100-SXM").bandwidth_gbs * 1e9
    for variant in VARIANTS:
        p = _plan(variant)
        read = p["active_params"] * 2 + p["decode_context_tokens"] * p["kv_bytes_per_token"]
        assert p["decode_floor_ms"] == pytest.approx(read / bandwidth * 1e3, rel=1e-3)
        for concurrency in PROMPTS:
            assert _raw(variant, concurrency)["median_tpot_ms"] >= p["decode_floor_ms"]
    c1 = _raw("vllm-nospec", 1)["median_tpot_ms"] / _plan("vllm-nospec")["decode_floor_ms"]
    assert 1 < c1 < 2


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_plan_for_each_engines_own_settings_is_not_flagged(variant: str) -> None:
    """vLLM's split with and without n-gram (0.60 % and 0.34 % off in the KV tokens when
    kept), and llama.cpp's buffers (exact): the plan for each engine's own settings
    (02_launch) within the kit's 2 % flag, weights and KV tokens alike."""
    launch = RunFolder(path=RUN / variant).result(STEP_LAUNCH)
    assert launch is not None
    for figure in ("weights_gib", "kv_cache_tokens"):
        row = launch.plan_vs_engine.row(figure)
        assert row is not None and row.diff_pct is not None and row.engine is not None
        assert not row.flagged and abs(row.diff_pct) <= FLAG_PCT
    if variant.startswith("llamacpp"):  # -c 65536: llama.cpp holds what it is told
        assert launch.planned_kv_tokens() == launch.log_facts["kv_cache_tokens"] == 65_536


def test_random_weights_accept_no_draft_and_the_cost_is_measured() -> None:
    """Acceptance is a property of the weights (every row says so): llama.cpp's draft
    proposes thousands of tokens and the random target takes almost none (0 of 3,984 at
    concurrency 1); vLLM's n-gram finds nothing to propose in random text. Both cost time,
    significantly (04_compare)."""
    for concurrency in PROMPTS:
        llama = _counters("llamacpp-draft", concurrency)
        assert llama["spec_draft_tokens"] > 3 * OUTPUT_LEN * PROMPTS[concurrency]
        assert llama["spec_accepted_tokens"] / llama["spec_draft_tokens"] < 0.01
    assert _counters("vllm-ngram", 1)["spec_draft_tokens"] == 0
    rows = _json(RUN / "04_compare.json")["results"]["variants"]
    for row in rows:
        if row["speculative"] != "off":
            assert row["speedup"] < 1 and row["speedup_high"] < 1
            assert "random weights" in row["caveats"]


def test_each_variant_is_set_beside_its_own_engines_planned_capacity(tmp_path: Path) -> None:
    """00_plan's KV tokens are vLLM's split without the engine's flags (466,096 on this H100);
    n-gram's share and llama.cpp's ``-c 65536 -np 64`` change what the engine holds, and the
    table and the report set each measurement beside the plan for its engine's own settings
    (the concurrency too: the tokens over max_model_len 1,024, or llama.cpp's 64 slots)."""
    table = variants_table(load_recipe_snapshot(RUN / "recipe.json"), RUN)
    planned = {v: set(zip(rows["planned_kv_tokens"], rows["planned_max_concurrency"],
                          strict=True)) for v, rows in table.groupby("variant")}
    assert planned == {"vllm-nospec": {(466_096, 466_096 / 1024)},
                       "vllm-ngram": {(435_552, 435_552 / 1024)},
                       "llamacpp-nospec": {(65_536, 64.0)}, "llamacpp-draft": {(65_536, 64.0)}}
    from benchlib.report import render_report

    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    page = render_report(run).html.read_text(encoding="utf-8")
    section = page[page.index("id='plan'"):page.index("id='energy'")]
    rows = [r for r in section.replace(",", "").split("<tr>") if "<td>chat</td>" in r]
    assert len(rows) == len(VARIANTS) * len(PROMPTS)
    for row in rows:
        variant = row.split("<td>")[1].split("</td>")[0]
        expected = {"vllm-nospec": 466_096, "vllm-ngram": 435_552}.get(variant, 65_536)
        assert f"<td>{expected}</td>" in row, variant
    assert "NVIDIA H100 80GB HBM3" in page
