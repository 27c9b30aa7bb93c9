"""A small run folder as benchlib run leaves it: two variants, one scenario at two
concurrencies, a plan, launch results, provenance and 04_compare's rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RECIPE: dict[str, Any] = {
    "name": "ab", "description": "two engines",
    "model": {"id": "tiny", "local_path": ".models/tiny"},
    "engine": {"kind": "vllm", "version": "0.32.0"},
    "variants": [{"name": "vllm-ngram"}, {"name": "llamacpp"}],
    "scenarios": [{"name": "chat", "endpoint": "chat", "input_len": 128, "output_len": 128,
                   "concurrencies": [1, 4], "num_prompts": [4, 8]}]}


#: 02_launch's plan against the live engine: vLLM's capacity as planned, llama.cpp's not
PLAN_VS_ENGINE: dict[str, dict[str, Any]] = {
    "vllm-ngram": {"figure": "kv_cache_tokens", "unit": "tokens", "plan": 524288,
                   "engine": 524288, "source": "log: KV cache size: N tokens",
                   "diff_pct": 0.0, "flagged": False, "advice": ""},
    "llamacpp": {"figure": "kv_cache_gib", "unit": "GiB", "plan": 0.015625,
                 "engine": 0.03125, "source": "log: llama_kv_cache: size = X MiB",
                 "diff_pct": 100.0, "flagged": True,
                 "advice": "the KV cache's bytes per token are not the plan's"}}


def _measure(tpot: float, conc: int) -> dict[str, Any]:
    return {"scenario": "chat", "concurrency": conc, "completed": 4, "failed": 0,
            "endpoint_type": "chat", "input_len": 128, "output_len": 128,
            "median_ttft_ms": 20.0 * conc, "p99_ttft_ms": 30.0 * conc,
            "median_tpot_ms": tpot * conc, "p99_tpot_ms": tpot * conc * 1.5,
            "output_throughput": 1000 / tpot * conc ** 0.5, "total_input_tokens": 512,
            "total_output_tokens": 512, "server_metrics": {"kv_cache_usage_peak": 0.1 * conc},
            "kv_usage_vs_plan": {"peak": 0.1 * conc, "expected": 0.125 * conc,
                                 "capacity_tokens": 8192, "tokens_per_request": 256,
                                 "capacity_flagged": False},
            "sdk": {"client": "openai 3.60.0", "seed": 7, "median_ttft_ms": 21.5 * conc,
                    "ttft_overhead_ms": 1.5 * conc, "median_tpot_ms": tpot * conc,
                    "tpot_overhead_ms": None, "median_e2el_ms": None,
                    "completed": 4, "failed": 0}}


def _energy(conc: int) -> dict[str, Any]:
    """An energy block as an H200 run would give it (NVML, one GPU)."""
    return {"source": "nvml", "reason": None, "devices": ["GPU 0 (NVIDIA H200)"],
            "method": "counter", "interval_s": 0.1, "samples": 40, "window_s": 4.0,
            "idle_window_s": 1.5, "energy_j": 400.0 * conc,
            "energy_j_bounds": [380.0 * conc, 420.0 * conc],
            "energy_above_idle_j": 100.0 * conc, "energy_j_per_output_token": 0.78125 * conc,
            "energy_above_idle_j_per_output_token": 0.2, "energy_j_per_request": 100.0 * conc,
            "avg_power_w": 100.0 * conc, "peak_power_w": 923.0, "peak_power_source": "instant",
            "idle_power_w": 75.0, "idle_at_rest": True, "energy_includes_idle": True,
            "sm_clock_mhz": {"min": 1380, "max": 1980, "mean": 1601.0},
            "mem_clock_mhz": {"min": 3201, "max": 3201, "mean": 3201.0},
            "throttle_reasons": {"sw_power_cap": 0.5}, "per_device": [], "flags": [],
            "samples_file": f"chat-c{conc}.energy.jsonl"}


NO_ENERGY = {"source": None, "reason": "NVML unavailable: NVML Shared Library Not Found"}


def samples_file(path: Path) -> None:
    """A samples file as the measure step keeps it: idle at 75 W, the load at 700 W."""
    lines = [json.dumps({"devices": ["GPU 0 (NVIDIA H200)"], "t0_perf_counter_s": 100.0,
                         "interval_s": 0.1, "idle_window_s": [0.0, 1.5],
                         "window_s": [1.8, 5.8]})]
    for i in range(70):
        t = i * 0.1
        lines.append(json.dumps({"t_s": t, "power_w": [700.0 if 1.8 <= t <= 5.8 else 75.0],
                                 "energy_j": [None], "sm_clock_mhz": [1980],
                                 "mem_clock_mhz": [3201], "throttle": [[]]}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def make_run(root: Path) -> Path:
    run = root / "2026-12-03" / "ab"
    write(run / "recipe.json", RECIPE)
    write(run / "run.json", {"recipe": "params/ab.yaml", "recipe_sha256": "x",
                             "finished": True, "statuses": {"vllm-ngram/03_measure": "ok"}})
    for name, tpot in (("vllm-ngram", 2.5), ("llamacpp", 1.0)):
        sub = {**RECIPE, "variants": []}
        write(run / name / "recipe.json", sub)
        write(run / name / ".results" / "00_plan.json",
              {"plan": {"decode_floor_ms": 0.5, "kv_cache_tokens": 4096,
                        "weights_gib_per_gpu": 0.1}})
        write(run / name / ".results" / "02_launch.json",
              {"startup_s": 30.0, "command": f"{name} --serve", "log_facts": {},
               "checks": [{"name": "tool_call", "ok": False, "seconds": 0.2,
                           "note": "answered without calling get_weather"}],
               "plan_vs_engine": {"settings": {"max_model_len": 2048}, "skipped": None,
                                  "rows": [PLAN_VS_ENGINE[name]]}})
        measured = {f"chat/c{c}": {**_measure(tpot, c), "energy": _energy(c) if name ==
                                   "vllm-ngram" else NO_ENERGY} for c in (1, 4)}
        if name == "vllm-ngram":
            for c in (1, 4):
                samples_file(run / name / "measure" / f"chat-c{c}.energy.jsonl")
        write(run / name / ".results" / "03_measure.json",
              {**measured,
               "accuracy/gsm8k": {"task": "gsm8k_local", "lm_eval_version": "0.4.9",
                                  "endpoint": "completions", "n": 8, "num_fewshot": 4,
                                  "strict_match": 0.125, "strict_match_stderr": 0.125,
                                  "flexible_extract": None, "flexible_extract_stderr": None,
                                  "seconds": 3.0, "samples": None,
                                  "caveat": "8 items: a smoke test, not a measurement"}})
        write(run / name / "03_measure.json", {"provenance": {
            "kit_commit": "abc", "python": "CPython 3.11",
            "engine": {"name": name, "version": "1"},
            "hardware": {"gpus": [], "nvml_error": "no driver",
                         "cpu": {"model": "Xeon", "logical_cores": 2}},
            "hardware_mismatches": ["expected 1 GPUs, found 0"]}})
    write(run / ".results" / "04_compare.json", {
        "runs": [], "provenance_differences": ["engine version"],
        "variants": [{"variant": "vllm-ngram", "scenario": "chat", "concurrency": 1,
                      "speculative": "ngram k=4", "mean_tokens_per_chunk": 2.9,
                      "server_mean_acceptance_length": 3.6, "speedup": 1.8,
                      "caveats": "engine: vllm against llamacpp; 1 of 4 streams arrived in "
                                 "bursts (TTFT, TPOT are bounds)"}],
        "references": [{"reference": "seed", "variant": "vllm-ngram", "scenario": "chat",
                        "concurrency": 1, "metric": "per_user_tok_s", "published": 109.42,
                        "measured": 400.0, "measured_over_published": 3.66,
                        "engine": "vLLM", "checkpoint": "w4a16", "hardware": "CMP",
                        "source": "seed 003", "published_on": "2026-10-10",
                        "measured_as": "one request",
                        "caveats": "checkpoint formats differ"}]})
    return run
