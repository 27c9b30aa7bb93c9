"""The H200 run of ``params/h200-llamacpp.yaml`` (tests/data/h200_run, see its README.md): a
real GPU engine's run folder, read without a GPU — the NVML capture at the run's start and a
step's end, the CUDA engine's log facts and build, measured TPOT beside the plan's decode
floor, BF16 against Q4_K_M, and the report rendered again from the committed folder."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from benchlib.engines import parse_engine_log
from benchlib.provenance import HardwareInfo
from benchlib.recipe import load_recipe
from benchlib.report import render_report, report_context

DATA = Path(__file__).resolve().parents[1] / "data" / "h200_run"
RUN = DATA / "h200-llamacpp"
REPO = Path(__file__).resolve().parents[2]
VARIANTS = ("bf16", "q4_k_m")
CONCURRENCIES = (1, 4, 8, 16)


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _sidecar(variant: str, step: str) -> dict[str, Any]:
    data: dict[str, Any] = _json(RUN / variant / f"{step}.json")
    return data


def _plan(variant: str) -> dict[str, Any]:
    plan: dict[str, Any] = _sidecar(variant, "00_plan")["results"]["plan"]
    return plan


def _tpot(variant: str, concurrency: int) -> float:
    result = _json(RUN / variant / "measure" / f"chat-c{concurrency}.json")
    return float(result["median_tpot_ms"])


def test_every_step_ran_on_the_recipe_kept_in_params() -> None:
    state = _json(RUN / "run.json")
    assert state["finished"] is True and state["recipe"] == "params/h200-llamacpp.yaml"
    assert set(state["statuses"].values()) == {"ok"} and len(state["statuses"]) == 9
    # the recipe in params/ is the one that ran (what the run kept of it, less its paths)
    recipe = load_recipe(REPO / "params" / "h200-llamacpp.yaml")
    ran = _json(RUN / "recipe.json")
    assert ran["name"] == recipe.name and ran["plan"] == recipe.plan
    assert [v["name"] for v in ran["variants"]] == [v.name for v in recipe.variants]
    assert ran["scenarios"][0]["concurrencies"] == list(CONCURRENCIES)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("step", ["00_plan", "02_launch", "03_measure"])
def test_the_sidecars_carry_the_nvml_capture_at_start_and_end(variant: str, step: str) -> None:
    provenance = _sidecar(variant, step)["provenance"]
    start = HardwareInfo.model_validate(provenance["hardware"])
    end = HardwareInfo.model_validate(provenance["hardware_end"])
    assert provenance["hardware_mismatches"] == []
    for info in (start, end):
        assert info.nvml_error is None and info.gpu_count == 1
        assert info.driver_version == "580.159.04" and info.cuda_driver_version == "13.0"
        [gpu] = info.gpus
        assert gpu.name == "NVIDIA H200" and gpu.memory_total_gib == 140.4
        assert gpu.uuid == "GPU-00000000-0000-0000-0000-000000000000"  # anonymised
        assert (gpu.sm_clock_max_mhz, gpu.mem_clock_max_mhz) == (1980, 3201)
        assert (gpu.app_sm_clock_mhz, gpu.app_mem_clock_mhz) == (1980, 3201)
        assert gpu.sm_clock_mhz and gpu.mem_clock_mhz == 3201 and gpu.graphics_clock_mhz
        assert (gpu.power_limit_w, gpu.power_default_limit_w) == (700.0, 700.0)
        assert gpu.power_draw_w and 40 < gpu.power_draw_w < 700
        assert gpu.temperature_c and 20 < gpu.temperature_c < 90
        assert (gpu.pcie_gen, gpu.pcie_width, gpu.pcie_gen_max, gpu.pcie_width_max) == \
            (5, 16, 5, 16)
        assert (gpu.persistence_mode, gpu.ecc_enabled, gpu.mig_enabled) == (True, True, False)
        assert gpu.clock_event_reasons is not None
        assert not {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown",
                    "hw_thermal_slowdown"} & set(gpu.clock_event_reasons)


def test_the_gpu_was_idle_at_the_start_and_at_full_clock_after_measuring() -> None:
    provenance = _sidecar("bf16", "03_measure")["provenance"]
    start, end = provenance["hardware"]["gpus"][0], provenance["hardware_end"]["gpus"][0]
    assert start["clock_event_reasons"] == ["gpu_idle"] and start["sm_clock_mhz"] < 1000
    assert end["sm_clock_mhz"] == end["app_sm_clock_mhz"] == 1980
    assert end["power_draw_w"] > start["power_draw_w"]


@pytest.mark.parametrize(("variant", "file_type"), [("bf16", "BF16"), ("q4_k_m", "Q4_K_M")])
def test_the_cuda_engines_log_facts(variant: str, file_type: str) -> None:
    launch = _sidecar(variant, "02_launch")["results"]
    facts = launch["log_facts"]
    assert facts["gpu_devices"] == ["NVIDIA H200, compute capability 9.0"]
    assert (facts["gpu_layers_offloaded"], facts["gpu_layers_total"]) == (33, 33)
    assert facts["version"] == "b11312"
    assert facts["kv_cache_tokens"] == 16384 and facts["kv_cache_gib"] == 2.0
    assert (facts["slots"], facts["slot_context_tokens"]) == (16, 1024)
    # the plan's weights and KV against the engine's own lines: within 2 %
    rows = {r["figure"]: r for r in launch["plan_vs_engine"]["rows"]}
    assert {"weights_gib", "kv_cache_gib", "kv_cache_tokens"} <= set(rows)
    assert not any(r["flagged"] for r in rows.values())
    # the committed log (gzipped) reads to the same facts
    text = gzip.decompress((RUN / variant / "engine.log.gz").read_bytes()).decode()
    again = parse_engine_log(text)
    assert not again.failures and again.model_file_type == file_type
    # the run recorded Q4_K_M as "Q4_K": the parser then cut llama.cpp's "Q4_K - Medium"
    # at the space (this run found it); everything else reads the same
    recorded = {"bf16": "BF16", "q4_k_m": "Q4_K"}[variant]
    assert facts["model_file_type"] == recorded
    # (the facts vLLM's memory breakdown added since are None for llama.cpp)
    added = {k: None for k in ("gpu_memory_utilization", "requested_gib", "activation_peak_gib",
                               "non_torch_gib", "cuda_graph_gib", "cuda_graph_estimate_gib",
                               "model_runner")}
    assert again.as_dict() == {**facts, **added, "model_file_type": file_type}
    assert "CUDA : ARCHS = 900" in text  # the build's own system_info line: sm_90


def test_the_engine_was_built_with_cuda_here() -> None:
    build = _json(DATA / "BUILD.json")
    assert build["backend"] == "cuda" and build["commit"].startswith("0c1e570")
    assert "-DCMAKE_CUDA_ARCHITECTURES=90" in build["cmake_flags"]
    assert "release 13.0" in build["nvcc"]  # the engine's CUDA runtime
    assert set(build["targets"]) == {"llama-server", "llama-quantize"}
    prepare = _json(DATA / "prepare.json")
    assert prepare["machine"]["python"].startswith("3.12")
    assert prepare["files_gib"]["llama3-8b-shape-bf16.gguf"] > 14


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("concurrency", CONCURRENCIES)
def test_measured_tpot_stays_above_the_decode_floor(variant: str, concurrency: int) -> None:
    plan = _plan(variant)
    assert plan["gpu"] == "H200" and plan["decode_context_tokens"] == 320
    floor_1, floor_b = plan["decode_floor_ms"], plan["decode_floor_ms_at_batch"]
    assert plan["decode_batch"] == 16 and floor_b > floor_1
    tpot = _tpot(variant, concurrency)
    # no engine decodes faster than the H200's bandwidth lets it read the weights
    assert tpot / floor_1 > 1 and tpot / floor_b > 1


def test_the_decode_floors_and_what_was_measured() -> None:
    bf16, q4 = _plan("bf16"), _plan("q4_k_m")
    # 4.8 TB/s: 14.96 GiB of BF16 weights (less the embedding table) in 3.14 ms
    assert bf16["weights_scheme"] == "gguf BF16" and bf16["weights_gib_per_gpu"] == 14.958
    assert bf16["decode_floor_ms"] == pytest.approx(3.136, abs=0.001)
    assert q4["weights_scheme"] == "gguf Q4_K_M" and q4["decode_floor_ms"] == \
        pytest.approx(0.965, abs=0.001)
    # BF16 at concurrency 1 decodes at 1.65 × its floor (61 % of the bandwidth); Q4_K_M,
    # whose floor is 3.2 × lower, gains far less: its kernels, not the bytes, bound it
    ratio_bf16 = _tpot("bf16", 1) / bf16["decode_floor_ms"]
    ratio_q4 = _tpot("q4_k_m", 1) / q4["decode_floor_ms"]
    assert 1.3 < ratio_bf16 < 2.0 and 3.0 < ratio_q4 < 5.5
    assert _tpot("q4_k_m", 1) < _tpot("bf16", 1)
    assert _tpot("bf16", 1) / _tpot("q4_k_m", 1) < bf16["decode_floor_ms"] / q4["decode_floor_ms"]


def _engine_ms_per_token(variant: str, requests: int) -> list[float]:
    """llama-server's own ``eval time`` per token of the first ``requests`` full-length
    requests (128 tokens): the measurement at concurrency 1 and its warm-up."""
    text = gzip.decompress((RUN / variant / "engine.log.gz").read_bytes()).decode()
    found = re.findall(r"\s eval time =\s+[\d.]+ ms /\s+128 tokens \(\s*([\d.]+) ms per token",
                       text)
    return [float(v) for v in found[:requests]]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_engines_own_timing_agrees_with_the_wire(variant: str) -> None:
    own = statistics.median(_engine_ms_per_token(variant, 9))  # warm-up + 8 prompts
    assert own == pytest.approx(_tpot(variant, 1), rel=0.05)


def test_the_compare_step_sets_bf16_beside_q4_k_m() -> None:
    results = _json(RUN / "04_compare.json")["results"]
    text = json.dumps(results)
    assert "llama3-8b-shape-bf16.gguf" in text and "llama3-8b-shape-q4_k_m.gguf" in text


def test_the_report_renders_from_the_committed_folder(tmp_path: Path) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)  # its report.html is kept once: docs/examples/h200-llamacpp
    assert not (run / "report.html").exists()
    files = render_report(run)
    page = files.html.read_text(encoding="utf-8")
    assert "The plan against what was measured" in page and "NVIDIA H200" in page
    # the provenance card: link, modes, and the clocks the measurement really ran at
    assert "gen 5 x16" in page and "on / on / off" in page
    # one card for both variants: the end clocks differ by their power draw, so each is named
    assert page.count("class='card'") == 1
    assert ("clock / power at end (differs)</span></b><span>bf16: SM 1980 MHz" in page
            and "<br>q4_k_m: SM 1980 MHz" in page)
    ctx = report_context(run)
    for variant in VARIANTS:
        floor = ctx["plan"][variant]["decode_floor_ms"]
        for c in CONCURRENCIES:
            tpot = ctx["variants"][variant]["chat"][f"c{c}"]["tpot_ms"]
            assert f"{tpot / floor:.2f}" in page  # tpot_over_floor, as the table prints it
