"""Each engine's prefix-cache unit (EngineAdapter.prefix_block): its flag, else the block it
reported at launch, else its default; unknown for an engine whose cache the kit does not
know."""

from __future__ import annotations

from benchlib.adapters import adapter

REPORTED = {"cache_block_reported": 128,
            "cache_block_from": "/metrics vllm:cache_config_info{block_size}"}


def test_vllm_reads_its_flag_then_its_metrics_then_its_default() -> None:
    vllm = adapter("vllm")
    assert vllm.prefix_block(["--block-size", "32"], REPORTED) == (
        32, "engine.args --block-size 32")
    assert vllm.prefix_block(["--block-size=64"]) == (64, "engine.args --block-size 64")
    assert vllm.prefix_block(["--block_size", "8"]) == (8, "engine.args --block-size 8")
    assert vllm.prefix_block(["--dtype", "bfloat16"], REPORTED) == (
        128, "vLLM reported it: /metrics vllm:cache_config_info{block_size}")
    block, why = vllm.prefix_block([]) or (0, "")
    assert block == 16 and "default" in why
    # the plan's block size is not the engine's word
    assert vllm.prefix_block([], {"block_size": 128, "block_size_from": "x"}) == \
        vllm.prefix_block([])


def test_sglang_pages_llamacpp_slots_and_the_unknown() -> None:
    assert adapter("sglang").prefix_block(["--page-size", "64"]) == (
        64, "engine.args --page-size 64")
    assert adapter("sglang").prefix_block([])[0] == 1  # type: ignore[index]
    assert adapter("llamacpp").prefix_block(["-np", "4"])[0] == 1  # type: ignore[index]
    assert adapter("endpoint").prefix_block([]) is None
