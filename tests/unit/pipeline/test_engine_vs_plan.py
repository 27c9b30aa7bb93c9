"""The plan against the live engine (02_launch) on recorded engine output: vLLM's CPU build
(its startup lines as the demo's engine printed them, and a real ``/metrics`` scrape of vLLM
0.32) and llama.cpp b11312 (a real ``-lv 4`` log with a draft model), each against the plan
for the engine's own settings; a difference above 2 % flagged and said; a scenario's expected
KV use for 03_measure; the launch result and the report carrying it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchlib.engines import parse_engine_log
from benchlib.pipeline import LaunchResult
from benchlib.pipeline.steps._cache_config import read_cache_config
from benchlib.pipeline.steps._engine_vs_plan import (
    EngineVsPlan,
    compare_engine_to_plan,
    flagged_lines,
    kv_usage_expected,
    prefix_unit,
)
from benchlib.recipe import Recipe, recipe_from_dict
from benchlib.runs import KvVsPlan

DATA = Path(__file__).resolve().parents[2] / "data"
#: vLLM 0.32's CPU build serving the tiny model with VLLM_CPU_KVCACHE_SPACE=1 (the demo)
VLLM_CPU_LOG = """\
(EngineCore pid=31718) INFO 12-03 15:08:29 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: model='/work/main/.models/tiny-llama', kv_cache_dtype=auto, device_config=cpu
(Worker pid=31751) INFO 12-03 15:08:39 [cpu_model_runner.py:68] Starting to load model /work/main/.models/tiny-llama...
(Worker pid=31751) INFO 12-03 15:08:40 [cpu_worker.py:260] Explicitly set (1.0/13.96) GiB for KV cache on node 0.
(EngineCore pid=31718) INFO 12-03 15:08:40 [kv_cache_utils.py:2327] CPU KV cache size: 524,288 tokens, Maximum concurrency for 2,048 tokens per request: 256.00x
(EngineCore pid=31718) INFO 12-03 15:08:41 [core.py:402] init engine (profile, create kv cache, warmup model) took 0.84 s
"""


def _vllm(model: Path, space: str = "1", args: list[str] | None = None) -> Recipe:
    return recipe_from_dict({
        "name": "v", "model": {"id": "tiny", "local_path": str(model)},
        "engine": {"kind": "vllm", "version": "0.32.0", "max_model_len": 2048,
                   "env": {"VLLM_CPU_KVCACHE_SPACE": space}, "args": args or []},
        "plan": {"gpu_memory_gib": 16, "kv_budget_gib": 1.0},
        "scenarios": [{"name": "chat", "input_len": 128, "output_len": 128,
                       "concurrencies": [1, 4]}]})


def _cache_config() -> dict[str, str]:
    return read_cache_config((DATA / "metrics" / "vllm-0.32-ngram.txt").read_text())


def _rows(result: EngineVsPlan) -> dict[str, tuple[Any, Any, Any, bool]]:
    return {r.figure: (r.plan, r.engine, r.diff_pct, r.flagged) for r in result.rows}


def test_vllm_cpu_kv_is_what_the_plan_says(tiny_model: Path) -> None:
    facts = parse_engine_log(VLLM_CPU_LOG).as_dict()
    cc = _cache_config()
    assert (cc["block_size"], cc["num_gpu_blocks"]) == ("128", "4096")
    result = compare_engine_to_plan(_vllm(tiny_model), None, facts, log_text=VLLM_CPU_LOG,
                                    cache_config=cc)
    assert result.skipped is None
    rows = _rows(result)
    # the CPU build prints no "Model loading took": shown, not compared
    assert rows["weights_gib"][1] is None and not rows["weights_gib"][3]
    assert rows["kv_budget_gib"] == (1.0, 1.0, 0.0, False)
    assert rows["kv_cache_tokens"] == (524_288, 524_288, 0.0, False)
    assert rows["kv_blocks"] == (4096, 4096, 0.0, False)
    # the engine's block size (128 on CPU) sized the plan's blocks; the budget is the env var
    assert result.settings["block_size"] == 128
    assert result.settings["kv_budget_from"] == "engine.env VLLM_CPU_KVCACHE_SPACE"
    assert flagged_lines(result) == []
    # without /metrics the budget comes from the CPU build's own line; blocks unknown
    bare = _rows(compare_engine_to_plan(_vllm(tiny_model, args=["--block-size", "128"]), None,
                                        facts, log_text=VLLM_CPU_LOG))
    assert bare["kv_budget_gib"][:2] == (1.0, 1.0) and bare["kv_blocks"] == (4096, None,
                                                                              None, False)


def test_a_different_budget_is_flagged_and_said(tiny_model: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    facts = parse_engine_log(VLLM_CPU_LOG).as_dict()
    result = compare_engine_to_plan(_vllm(tiny_model, space="2"), None, facts,
                                    log_text=VLLM_CPU_LOG, cache_config=_cache_config())
    rows = _rows(result)
    assert rows["kv_budget_gib"] == (2.0, 1.0, -50.0, True)
    assert rows["kv_cache_tokens"][2:] == (-50.0, True) and rows["kv_blocks"][3]
    lines = flagged_lines(result)
    assert len(lines) == 3
    assert lines[0].startswith("plan vs engine: kv_budget_gib differs by -50.0 % (plan 2 GiB, "
                               "engine 1 GiB from /metrics vllm:cache_config_info"
                               "{kv_cache_memory_bytes}): ")
    assert "VLLM_CPU_KVCACHE_SPACE" in lines[0] and "--kv-cache-dtype" in lines[1]
    # a 1 % difference is within the 2 % allowed
    close = {**_cache_config(), "num_gpu_blocks": str(4096 + 41)}
    blocks = _rows(compare_engine_to_plan(_vllm(tiny_model), None, facts,
                                          log_text=VLLM_CPU_LOG, cache_config=close))
    assert blocks["kv_blocks"][2] == pytest.approx(1.001, abs=1e-3) and not blocks["kv_blocks"][3]


def _tiny_llama_gguf(path: Path, q8: bool = False) -> Path:
    """The tiny model's shape (make model: 4 layers, 256 wide, 4 heads, 2 KV heads, 4,096
    tokens) in a GGUF as convert_hf_to_gguf writes it: matrices F16 (or Q8_0), norms F32."""
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("Tiny Llama")
    w.add_block_count(4)
    w.add_context_length(4096)
    w.add_embedding_length(256)
    w.add_feed_forward_length(512)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_vocab_size(4096)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if q8 else gguf.LlamaFileType.MOSTLY_F16)

    def matrix(name: str, rows: int, cols: int) -> None:
        if q8:
            packed = gguf.quants.quantize(np.zeros((rows, cols), np.float32),
                                          gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, packed, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, np.zeros((rows, cols), np.float16))

    matrix("token_embd.weight", 4096, 256)
    matrix("output.weight", 4096, 256)
    w.add_tensor("output_norm.weight", np.ones(256, np.float32))
    for i in range(4):
        for name, rows, cols in (("attn_q", 256, 256), ("attn_k", 128, 256),
                                 ("attn_v", 128, 256), ("attn_output", 256, 256),
                                 ("ffn_gate", 512, 256), ("ffn_up", 512, 256),
                                 ("ffn_down", 256, 512)):
            matrix(f"blk.{i}.{name}.weight", rows, cols)
        for name in ("attn_norm", "ffn_norm"):
            w.add_tensor(f"blk.{i}.{name}.weight", np.ones(256, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _llamacpp(model: Path, draft: Path | None, args: list[str]) -> Recipe:
    spec = {"method": "draft", "k": 4, "draft_model": str(draft)} if draft else {}
    return recipe_from_dict({
        "name": "l", "model": {"id": "tiny", "local_path": str(model), "format": "gguf"},
        "engine": {"kind": "llamacpp", "executable": "/e/llama-server", "max_model_len": 1024,
                   "args": args, "speculative": spec},
        "plan": {"gpu_memory_gib": 16, "kv_budget_gib": 1.0},
        "scenarios": [{"name": "chat", "input_len": 128, "output_len": 128,
                       "concurrencies": [1, 2]}]})


def test_llamacpp_kv_cells_and_buffers_are_what_the_plan_says(tmp_path: Path) -> None:
    """The recorded log: -c 2048 -np 2 (1,024 cells per slot), F16 target, Q8_0 draft."""
    target = _tiny_llama_gguf(tmp_path / "tiny-llama-f16.gguf")
    draft = _tiny_llama_gguf(tmp_path / "tiny-llama-q8_0.gguf", q8=True)
    text = (DATA / "llamacpp_logs" / "b11312-cpu-draft-lv4.log").read_text()
    facts = parse_engine_log(text).as_dict()
    result = compare_engine_to_plan(_llamacpp(target, draft, ["-np", "2"]), None, facts,
                                    log_text=text)
    rows = _rows(result)
    assert rows["kv_cache_tokens"] == (2048, 2048, 0.0, False)
    # 2,048 cells × 4 layers × 2 (K, V) × 2 KV heads × 64 × 2 bytes = 4 MiB
    assert rows["kv_cache_gib"] == (4 / 1024, 4 / 1024, 0.0, False)
    assert rows["draft_kv_cache_gib"] == (4 / 1024, 4 / 1024, 0.0, False)
    plan_w, engine_w, diff_w, flagged_w = rows["weights_gib"]
    assert plan_w == pytest.approx(8_922_112 / 2**30) and engine_w == 8.51 / 1024
    assert abs(diff_w) < 0.1 and not flagged_w  # the log prints MiB to two decimals
    assert abs(rows["draft_weights_gib"][2]) < 0.2 and not rows["draft_weights_gib"][3]
    assert result.settings["slots"] == 2 and result.settings["kv_cells"] == 2048
    assert result.settings["cache_type"] == "f16"
    # the F16 file named as the draft: the draft's buffers (Q8_0) are flagged
    wrong = _rows(compare_engine_to_plan(_llamacpp(target, target, ["-np", "2"]), None, facts,
                                         log_text=text))
    assert wrong["draft_weights_gib"][3] and wrong["draft_weights_gib"][2] < -40
    # a KV type the plan cannot size: shown without a plan figure, never flagged
    q8kv = _rows(compare_engine_to_plan(_llamacpp(target, None, ["-np", "2", "-ctk", "q8_0",
                                                                 "-ctv", "q8_0"]), None, facts,
                                        log_text=text))
    assert q8kv["kv_cache_gib"][0] is None and not q8kv["kv_cache_gib"][3]


def test_what_is_not_compared_says_why(tiny_model: Path) -> None:
    endpoint = recipe_from_dict({
        "name": "e", "model": {"id": "tiny", "local_path": str(tiny_model)},
        "engine": {"kind": "endpoint", "base_url": "http://127.0.0.1:9"},
        "scenarios": [{"name": "chat"}]})
    assert "vLLM and llama.cpp" in (compare_engine_to_plan(endpoint, None, {}).skipped or "")
    hub = recipe_from_dict({"name": "h", "model": {"id": "org/m"},
                            "engine": {"kind": "vllm"}, "scenarios": [{"name": "chat"}]})
    assert compare_engine_to_plan(hub, None, {}).skipped == "no local model to plan from"


def test_expected_kv_use_of_a_scenario(tiny_model: Path) -> None:
    facts = parse_engine_log(VLLM_CPU_LOG).as_dict()
    vs = compare_engine_to_plan(_vllm(tiny_model), None, facts, log_text=VLLM_CPU_LOG,
                                cache_config=_cache_config())
    launch = LaunchResult(kind="vllm", base_url="http://x/v1", command="", startup_s=1.0,
                          engine_log="engine.log", log_facts=facts, plan_vs_engine=vs)
    saved = launch.model_dump(mode="json")
    assert LaunchResult.model_validate(saved).plan_vs_engine == vs
    scenario = _vllm(tiny_model).scenarios[0]
    # 4 requests of 256 tokens: 2 blocks of 128 each, of 4,096 blocks
    assert kv_usage_expected(LaunchResult.model_validate(saved).plan_vs_engine, scenario,
                             4) == KvVsPlan(expected=round(8 / 4096, 6),
                                            capacity_tokens=524_288, tokens_per_request=256,
                                            capacity_flagged=False)
    # no plan against the engine: nothing to expect
    assert kv_usage_expected(EngineVsPlan(), scenario, 4) is None


def _unit_recipe(tmp_path: Path, **engine: object) -> Recipe:
    return recipe_from_dict({
        "name": "u", "model": {"id": "tiny", "local_path": str(tmp_path)},
        "engine": engine, "scenarios": [{"name": "chat"}]})


def test_the_unit_is_the_engines_own(tmp_path: Path, tiny_model: Path) -> None:
    """vLLM's CPU build reported 128-token blocks at 02_launch (its /metrics): the share is
    counted in them, not in the 16 of vLLM's GPU default, and not in a block the recipe's
    plan gave (plan.block_size 32 sizes the plan, not the engine); a flag in engine.args
    wins; an endpoint's cache is not known (the unit is then assumed, and the result says
    so)."""
    facts = parse_engine_log(VLLM_CPU_LOG).as_dict()
    launched = compare_engine_to_plan(_vllm(tiny_model), None, facts, log_text=VLLM_CPU_LOG,
                                      cache_config=_cache_config())
    vllm = _unit_recipe(tmp_path, kind="vllm")
    reported = (128, "vLLM reported it: /metrics vllm:cache_config_info{block_size}")
    assert prefix_unit(vllm, launched) == reported
    planned = _vllm(tiny_model)
    planned = planned.model_copy(update={"plan": {**planned.plan, "block_size": 32}})
    by_plan = compare_engine_to_plan(planned, None, facts, log_text=VLLM_CPU_LOG,
                                     cache_config=_cache_config())
    assert by_plan.settings["block_size"] == 32 and prefix_unit(vllm, by_plan) == reported
    assert prefix_unit(vllm, None)[0] == 16  # type: ignore[index]
    assert prefix_unit(vllm, compare_engine_to_plan(_vllm(tiny_model), None, facts,
                                                    log_text=VLLM_CPU_LOG))[0] == 16  # type: ignore[index]
    flagged = _unit_recipe(tmp_path, kind="vllm", args=["--block-size", "32"])
    assert prefix_unit(flagged, launched) == (32, "engine.args --block-size 32")
    assert prefix_unit(_unit_recipe(tmp_path, kind="endpoint", base_url="http://127.0.0.1:9"),
                       None) is None
