"""llama.cpp loads and serves the random-weight GGUF: ``benchlib random-gguf --shape tiny``
(the ``qwen35`` architecture of open-jet's Qwen3.8-27B, unsloth's Q4_K_M mix, with the tiny
model's tokenizer) started as ``llama-server`` through the kit's own path (``plan_launch`` →
``EngineProcess``) on loopback, then a streamed chat of a fixed length.

``$BENCHLIB_LLAMA_SERVER`` (the binary) and ``$BENCHLIB_LLAMACPP`` (the folder with
``gguf-py``, default ``.engines/llamacpp``) as in ``make test``; skipped without them.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest

from benchlib.engines import EngineProcess, parse_engine_log, plan_launch
from benchlib.engines._ready import first_token
from benchlib.models import SHAPES, write_random_gguf
from benchlib.recipe import EngineSpec, ModelSpec

REPO = Path(__file__).resolve().parents[2]
LLAMACPP = Path(os.environ.get("BENCHLIB_LLAMACPP") or REPO / ".engines" / "llamacpp")
SERVER = Path(os.environ.get("BENCHLIB_LLAMA_SERVER") or LLAMACPP / "bin" / "llama-server")
OUTPUT_LEN = 12

pytestmark = pytest.mark.skipif(
    not (SERVER.is_file() and (LLAMACPP / "gguf-py" / "gguf").is_dir()),
    reason=f"no llama-server ({SERVER}) or gguf-py ({LLAMACPP}): make llamacpp")


def _chat(base_url: str, model: str) -> dict[str, object]:
    """One streamed chat of OUTPUT_LEN tokens (EOS ignored); the final usage chunk."""
    body = {"model": model, "messages": [{"role": "user", "content": "Write a poem."}],
            "max_tokens": OUTPUT_LEN, "ignore_eos": True, "temperature": 0.8, "stream": True,
            "stream_options": {"include_usage": True}}
    req = urllib.request.Request(base_url + "/v1/chat/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    usage: dict[str, object] = {}
    with urllib.request.urlopen(req, timeout=120) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if line.startswith("data: {"):
                usage = json.loads(line[6:]).get("usage") or usage
    return usage


def test_llamacpp_serves_the_random_qwen35(tmp_path: Path, tiny_model: Path) -> None:
    gguf = write_random_gguf(tmp_path / "tiny-qwen35-q4_k_m.gguf", SHAPES["tiny"], tiny_model,
                             llamacpp_dir=LLAMACPP, jobs=2)
    engine = EngineSpec(kind="llamacpp", executable=SERVER, max_model_len=512,
                        ready_timeout_s=180, args=["-np", "1", "-nr"])
    plan = plan_launch(engine, ModelSpec(id="tiny-qwen35", format="gguf", local_path=gguf),
                       gguf)
    process = EngineProcess(plan.resolved_argv(), log_path=tmp_path / "engine.log",
                            ready_url=plan.ready_url, env=plan.env,
                            ready_timeout=engine.ready_timeout_s)
    with process:
        assert first_token(plan.base_url, "tiny-qwen35", chat=True) is None
        usage = _chat(plan.base_url, "tiny-qwen35")
    log = process.log_path.read_text(errors="replace")
    assert usage.get("completion_tokens") == OUTPUT_LEN, usage
    assert "qwen35" in log
    facts = parse_engine_log(log)
    assert facts.model_file_type is not None and facts.model_file_type.startswith("Q4_K")
    assert not facts.failures, facts.failures
    assert process.group_gone is True
