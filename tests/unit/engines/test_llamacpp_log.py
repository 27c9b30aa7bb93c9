"""llama.cpp: the command ``plan_launch`` builds for ``llama-server``, and the facts read out
of real ``llama-server`` logs (``tests/data/llamacpp_logs``, captured from b11312)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.engines import parse_engine_log, plan_launch
from benchlib.recipe import EngineSpec, ModelSpec

LOGS = Path(__file__).resolve().parents[2] / "data" / "llamacpp_logs"


def _facts(name: str) -> dict[str, object]:
    facts = parse_engine_log((LOGS / name).read_text())
    assert not facts.failures, facts.failures
    return {k: v for k, v in facts.as_dict().items() if v is not None}


def test_llama_server_command_line() -> None:
    spec = EngineSpec(kind="llamacpp", executable=Path("/e/llama-server"), port=8124,
                      max_model_len=2048, args=["-np", "2"])
    model = ModelSpec(id="tiny", format="gguf")
    plan = plan_launch(spec, model, Path("/m/tiny-f16.gguf"))
    assert plan.argv == ["/e/llama-server", "-m", "/m/tiny-f16.gguf", "--alias", "tiny",
                         "--host", "127.0.0.1", "--port", "8124", "-c", "4096", "--metrics",
                         "-lv", "4", "-np", "2"]
    assert plan.ready_url == "http://127.0.0.1:8124/health"


def test_verbose_start_with_a_draft_model() -> None:
    """``-lv 4``: the library's lines; the draft's follow ``loading draft model``."""
    assert _facts("b11312-cpu-draft-lv4.log") == {
        "version": "b11312", "build_number": 11312, "commit": "0c1e570",
        "threads": 2, "slots": 2, "slot_context_tokens": 1024, "context_tokens": 2048,
        # 1024 cells per stream × 2 streams (2/2 seqs); 4.00 MiB
        "kv_cache_tokens": 2048, "kv_cache_gib": 4.0 / 1024,
        "model_file_type": "F16", "model_loading_gib": 8.51 / 1024,
        "model_loading_s": round(1.602409 - 0.014676, 6),
        "draft_model_file_type": "Q8_0", "draft_model_gib": 4.52 / 1024,
        "draft_kv_cache_gib": 4.0 / 1024,
    }


def test_default_verbosity_says_less() -> None:
    assert _facts("b11312-cpu-default.log") == {
        "threads": 2, "slots": 2, "slot_context_tokens": 1024,
        "model_loading_s": round(0.779696 - 0.008682, 6)}
    cuda = _facts("b11312-h200-cuda-draft-default.log")
    assert cuda["threads"] == 16 and cuda["slots"] == 2
    assert "draft_model_file_type" not in cuda  # the draft's own lines need -lv 4


def test_a_removed_flag_is_named_with_what_to_use() -> None:
    facts = parse_engine_log((LOGS / "b11312-removed-flag.log").read_text())
    [failure] = facts.failures
    assert failure.name == "removed-argument" and "--spec-draft-n-max" in failure.hint
    assert "--draft-max" in failure.line


def test_a_restart_in_one_log_reads_the_last_start() -> None:
    text = (LOGS / "b11312-cpu-draft-lv4.log").read_text()
    second = text.replace("n_ctx                 = 2048", "n_ctx                 = 4096")
    facts = parse_engine_log(text + "\n" + second)
    assert facts.context_tokens == 4096


def test_vllm_logs_get_no_llamacpp_facts() -> None:
    facts = parse_engine_log("vLLM API server version 0.32.0\nGPU KV cache size: 10 tokens\n"
                             "INFO llama threadpool init, n_threads = 4\n")
    assert facts.threads is None and facts.kv_cache_tokens == 10


@pytest.mark.parametrize(("printed", "name"), [
    ("Q4_K - Medium", "Q4_K_M"), ("Q5_K - Small", "Q5_K_S"), ("Q3_K - Large", "Q3_K_L"),
    ("Q2_K - Medium", "Q2_K"), ("IQ2_XXS - 2.0625 bpw", "IQ2_XXS"), ("BF16", "BF16"),
    ("Q8_0", "Q8_0")])
def test_file_types_read_as_gguf_names_them(printed: str, name: str) -> None:
    """llama.cpp prints K-quant sizes as words (the H200 run's Q4_K_M: ``Q4_K - Medium``);
    the facts use GGUF's file type names, as the memory plan does."""
    facts = parse_engine_log("srv    load_model: loading model 'm.gguf'\n"
                             f"I print_info: file type   = {printed}\n"
                             "I print_info: file size   = 4.58 GiB (4.89 BPW)\n")
    assert facts.model_file_type == name
