"""GGUF reading (a tiny file written with gguf's writer), the plan's verdicts and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchlib.cli import main
from benchlib.memory import PlanConfig, load_gguf, parse_vllm_log, plan

DATA = Path(__file__).resolve().parents[2] / "data" / "vllm_logs"
REQUIRED = ("total_params", "active_params", "weights_gib_per_gpu", "kv_bytes_per_token",
            "kv_budget_gib_per_gpu", "kv_cache_tokens", "max_concurrency", "decode_floor_ms",
            "fits", "warnings")


def _tiny_gguf(path: Path) -> Path:
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tiny-q8")
    w.add_block_count(2)
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_vocab_size(256)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    rng = np.random.default_rng(0)

    def q8(name: str, rows: int, cols: int) -> None:
        data = rng.standard_normal((rows, cols)).astype(np.float32)
        packed = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
        w.add_tensor(name, packed, raw_dtype=gguf.GGMLQuantizationType.Q8_0)

    q8("token_embd.weight", 256, 64)
    for i in range(2):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(64, dtype=np.float32))
        q8(f"blk.{i}.attn_q.weight", 64, 64)
        q8(f"blk.{i}.attn_k.weight", 32, 64)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_gguf_header_and_bytes(tmp_path: Path) -> None:
    info = load_gguf(_tiny_gguf(tmp_path / "tiny.gguf"))
    a = info.arch
    assert (a.num_layers, a.hidden_size, a.num_heads, a.num_kv_heads) == (2, 64, 4, 2)
    assert a.tie_embeddings  # no output.weight tensor
    assert info.file_type == "Q8_0"
    q8_elems = 256 * 64 + 2 * (64 * 64 + 32 * 64)
    assert info.bytes_by_type["Q8_0"] == q8_elems // 32 * 34  # 32 weights + fp16 scale
    assert info.bytes_by_type["F32"] == 2 * 64 * 4 == info.high_precision_bytes
    p = plan(PlanConfig(model=tmp_path / "tiny.gguf", gpu_memory_gib=8))
    assert p.weights.scheme == "gguf Q8_0" and p.weights.total_bytes == info.tensor_bytes


def test_seed_000_glm52_on_eight_b200() -> None:
    cfg = DATA / "examples" / "glm-5.2"
    base = {"gpu": "B200", "tp": 8, "max_model_len": 32768, "kv_cache_dtype": "fp8"}
    bf16 = plan(PlanConfig(model=cfg, **base))
    assert not bf16.fits and "weights alone" in bf16.verdict
    fp8 = plan(PlanConfig(model=DATA / "examples" / "glm-5.2-fp8", **base))
    assert fp8.fits and fp8.weights.scheme.startswith("fp8 (block")
    assert fp8.kv_budget_gib is not None and fp8.kv_budget_gib > 60
    int4 = plan(PlanConfig(model=cfg, weight_dtype="int4", **base))
    assert int4.capacity and fp8.capacity
    assert int4.capacity.max_concurrency > fp8.capacity.max_concurrency


def test_given_budget_and_too_long_context() -> None:
    cfg = DATA / "qwen3-14b-tp1"
    p = plan(PlanConfig(model=cfg, kv_budget_gib=6.51, max_model_len=32768))
    assert p.kv_budget_source == "given" and p.kv_cache_tokens == 42656
    tight = plan(PlanConfig(model=cfg, kv_budget_gib=1.0, max_model_len=40960))
    assert not tight.fits and "refuses to start" in tight.verdict


def test_log_parser() -> None:
    got = parse_vllm_log([
        "INFO vLLM API server version 0.10.1.1",
        "(VllmWorker TP0) Model loading took 7.1217 GiB and 2.88 seconds",
        "(VllmWorker TP1) Model loading took 9.9 GiB and 2.88 seconds",
        "Available KV cache memory: -1.44 GiB",
        "GPU KV cache size: 1,192,160 tokens",
        "Maximum concurrency for 16,384 tokens per request: 72.76x"])
    assert got == {"vllm_version": "0.10.1.1", "weights_gib": 7.1217, "kv_budget_gib": -1.44,
                   "kv_cache_tokens": 1192160, "max_concurrency": 72.76}


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--model-config", str(DATA / "gpt-oss-120b-a100-tp4-u080"),
                 "--gpu", "H200", "--num-gpus", "2", "--max-model-len", "32768", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    for key in REQUIRED:
        assert key in out, key
    assert out["fits"] is True and out["tp"] == 2 and out["kv_bytes_per_token"] > 0
    assert out["decode_floor_ms"] > 0


def test_cli_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--model-config", str(DATA / "qwen3-14b-tp1"),
                 "--gpu-memory-gib", "24", "--max-model-len", "8192"]) == 0
    out = capsys.readouterr().out
    assert "verdict" in out and "KV cache" in out


@pytest.mark.parametrize(("argv", "flag"), [
    (["--gpu", "GTX-9999"], "--gpu"),
    (["--tp", "3", "--num-gpus", "4"], "--num-gpus"),
    (["--kv-cache-dtype", "int2"], "--kv-cache-dtype"),
    (["--weight-dtype", "int3"], "--weight-dtype"),
    (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
])
def test_cli_errors_exit_2(argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--model-config", str(DATA / "qwen3-14b-tp1"), *argv])
    assert code == 2
    assert flag in capsys.readouterr().err


def test_cli_missing_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--model-config", str(tmp_path / "nope")]) == 2
    assert "--model-config" in capsys.readouterr().err
