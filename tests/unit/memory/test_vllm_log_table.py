"""The one table of vLLM's startup lines and the memory comparison that reads it."""

from __future__ import annotations

import pytest

from benchlib.memory import VLLM_LOG_PATTERNS, log_number, parse_vllm_log

#: one real line (tests/data/vllm_logs, vLLM's own output) per key of the table
SAMPLES = {
    "version": "(APIServer pid=1) INFO 12-02 [api_utils.py:347]  ▄▄ ▄█ █ █ version 0.32.0",
    "weights_gib": "Model loading took: 67.72 GiB memory and 45.09 seconds",
    "kv_budget_gib": "INFO [gpu_worker.py:563] Available KV cache memory: -24.42 GiB",
    "kv_cache_tokens": "[kv_cache_utils.py:849] GPU KV cache size: 1,192,160 tokens",
    "max_concurrency": "[kv_cache_utils.py:1234] Maximum concurrency for 120,000 tokens per "
                       "request: 2.48x",
    "cuda_graph_s": "[gpu_model_runner.py] Graph capturing finished in 12 secs, took 0.50 GiB",
    "init_engine_s": "[core.py] init engine (profile, create kv cache, warmup model) took "
                     "61.20 seconds",
    # the H200 run of vLLM 0.26.0 (tests/data/h200_memory)
    "cuda_graph_estimate_gib": "(EngineCore pid=4109) INFO 12-04 06:11:16 "
                               "[gpu_model_runner.py:6737] Estimated CUDA graph memory: 0.64 "
                               "GiB total",
    "actual_usage": "[gpu_worker.py:857] Free memory on device (139.29/139.8 GiB) on startup. "
                    "Desired GPU memory utilization is (0.92, 128.62 GiB). Actual usage is "
                    "56.88 GiB for weight, 2.68 GiB for peak activation, 0.24 GiB for "
                    "non-torch memory, and 0.8 GiB for CUDAGraph memory. Replace …",
    "model_runner": "INFO [gpu_worker.py:378] Using V2 Model Runner",
}


def test_every_line_of_the_table_has_a_sample() -> None:
    assert set(SAMPLES) == set(VLLM_LOG_PATTERNS)
    for key, line in SAMPLES.items():
        assert VLLM_LOG_PATTERNS[key].search(line), key


def test_the_table_cannot_be_changed_at_run_time() -> None:
    with pytest.raises(TypeError):
        VLLM_LOG_PATTERNS["version"] = VLLM_LOG_PATTERNS["weights_gib"]  # type: ignore[index]


@pytest.mark.parametrize("line,budget", [
    ("Available KV cache memory: -1.44 GiB", -1.44),
    ("(Worker_TP0 pid=611) INFO [gpu_worker.py:563] Available KV cache memory: 8.22 GiB", 8.22),
])
def test_kv_budget_negative_and_positive(line: str, budget: float) -> None:
    assert parse_vllm_log([line]) == {"kv_budget_gib": budget}


@pytest.mark.parametrize("line,version", [
    ("INFO vLLM API server version 0.10.1.1", "0.10.1.1"),
    ("Initializing a V1 LLM engine (v0.11.0) with config: model='m'", "0.11.0"),
    ("Initializing an LLM engine (v0.6.3.post1) with config: model='m'", "0.6.3.post1"),
    ("▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0", "0.32.0"),
])
def test_version_lines(line: str, version: str) -> None:
    assert parse_vllm_log([line]) == {"vllm_version": version}


def test_other_versions_are_not_vllm_s() -> None:
    assert parse_vllm_log(["INFO Using transformers version 4.56.1",
                           "vllm 0.27.1"]) == {}


@pytest.mark.parametrize("line", [
    "Model loading took 14.2488 GiB and 4.422213 seconds",
    "Model loading took: 14.2488 GiB memory and 31.46 seconds",
    "Model loading took: 14.2488 GiB memory",
    "Loading model weights took 14.2488 GB",
])
def test_weight_lines_of_every_era(line: str) -> None:
    assert parse_vllm_log([line]) == {"weights_gib": 14.2488}


def test_first_match_wins_and_separators() -> None:
    got = parse_vllm_log(["GPU KV cache size: 1,000 tokens", "GPU KV cache size: 2,000 tokens",
                          "Maximum concurrency for 16,384 tokens per request: 1,072.76x"])
    assert got == {"kv_cache_tokens": 1000, "max_concurrency": 1072.76}
    assert log_number("-1,234.5") == -1234.5
