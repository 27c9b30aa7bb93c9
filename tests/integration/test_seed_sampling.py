"""Seed 000's sampling as its scripts sent it: an ``endpoint`` copy of its recipe, run with
``benchlib run`` against the scripted server (which logs every request body's top-level
keys in its truth rows), sends no sampling key in any measured request — the wire run's, its
warmup's, nor the SDK view's — while the length key goes on, and the result says so."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from benchlib.measure import LENGTH_KEYS, SAMPLING_KEYS
from benchlib.pipeline import read_sidecar
from tests._runs import run_day

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "params" / "seeds" / "000-glm-kimi-8xb200.yaml"


def _endpoint_copy(tmp_path: Path, tiny_model: Path, url: str) -> Path:
    """Seed 000's recipe with its scenarios untouched, its engine an endpoint (the
    scripted server), its model files the tiny model's (served under the post's name)."""
    recipe = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    recipe["engine"] = {"kind": "endpoint", "base_url": url}
    recipe["model"] = {**recipe["model"], "local_path": str(tiny_model)}
    for key in ("variants", "compare", "plan", "hardware", "writeup"):
        recipe.pop(key, None)
    recipe["checks"] = {"chat": False}
    path = tmp_path / "seed000-endpoint.yaml"
    path.write_text(yaml.safe_dump(recipe, allow_unicode=True), encoding="utf-8")
    return path


def test_seed_000_sends_no_sampling_key(scripted: Callable[..., Any], tmp_path: Path,
                                        tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "2", "--itl-ms", "0", "--model", "glm-5.2-fp8")
    path = _endpoint_copy(tmp_path, tiny_model, server.url)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", str(path), "--outputs",
                           str(out)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    prompt = json.loads((REPO / "params/seeds/data/000-prompt.jsonl").read_text(
        encoding="utf-8").splitlines()[0])["messages"]
    digest = hashlib.sha256(json.dumps(prompt, sort_keys=True, ensure_ascii=False)
                            .encode()).hexdigest()
    truth = [json.loads(line) for line in server.truth.read_text().splitlines()]
    # every request of the run carried the post's prompt (the functional checks are off):
    # 02_launch's probe, the warmup, the five measured and the SDK view's warmup and five
    assert {row["prompt_sha256"] for row in truth} == {digest}
    assert len(truth) >= 1 + 5 + 1 + 5, len(truth)
    for row in truth:
        keys = set(row["body_keys"])
        assert not keys & SAMPLING_KEYS, keys
        assert keys & LENGTH_KEYS <= {"max_completion_tokens", "ignore_eos"}, keys
    assert sum("ignore_eos" not in row["body_keys"] for row in truth) >= 12
    run_dir = run_day(out) / "seed000-glm-kimi-8xb200"
    result = json.loads((run_dir / "measure" / "single-stream-c1.json").read_text())
    sent = result["benchlib"]["sent_keys"]
    assert sent["sampling"] == "server-default" and sent["sampling_keys"] == []
    assert sent["length_keys"] == ["max_completion_tokens"], sent
    assert set(sent["body_keys"]) == {"model", "messages", "stream", "stream_options",
                                      "max_completion_tokens"}, sent
    measured = read_sidecar(run_dir / "03_measure.json").results["single-stream/c1"]
    assert measured["sdk"]["completed"] == 5, measured["sdk"]
