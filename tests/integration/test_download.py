"""00_plan and 01_download against the hub API (a loopback stand-in, through HF_ENDPOINT):
the plan reads config.json alone before any download; the download pins the resolved commit,
honours include patterns, checks disk space first, sends the token and never writes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchlib.pipeline import read_sidecar
from benchlib.provenance import hash_model_folder
from tests._runs import run_day

from ._fakehub import SHA, FakeHub

REPO = Path(__file__).resolve().parents[2]
TOKEN = "hf_planted_token_9d2e11"


def run(tmp_path: Path, hub: FakeHub, steps: str,
        model: str = 'id: org/tiny, revision: main, include: ["*.json", "*.safetensors"]'
        ) -> subprocess.CompletedProcess[str]:
    recipe = tmp_path / "hub.yaml"
    recipe.write_text(f"""\
name: hub
model: {{{model}, hf_token_env: BENCH_HF_TOKEN}}
engine: {{kind: endpoint, base_url: "http://127.0.0.1:9"}}
plan: {{gpu: H200, kv_cache_dtype: auto}}
scenarios: [{{name: a, input_len: 8, output_len: 2}}]
steps: {steps}
""")
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"),
           "BENCH_HF_TOKEN": TOKEN, "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_HUB_OFFLINE", None)
    return subprocess.run([sys.executable, "-m", "benchlib", "run", str(recipe), "--outputs",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=300)


def test_plan_then_download_from_the_hub(tmp_path: Path, tiny_model: Path) -> None:
    with FakeHub("org/tiny", tiny_model, TOKEN) as hub:
        proc = run(tmp_path, hub, "[00_plan, 01_download]")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    run_dir = run_day(tmp_path / "out") / "hub"
    plan = read_sidecar(run_dir / "00_plan.json").results["plan"]
    assert plan["kv_bytes_per_token"] == 4 * 2 * 2 * 64 * 2 and plan["fits"] is True
    dl = read_sidecar(run_dir / "01_download.json")
    assert dl.status == "ok"
    assert dl.results["resolved_revision"] == SHA and dl.results["source"] == "hub"
    got = Path(dl.results["model_path"])
    assert sorted(p.name for p in got.iterdir()) == [
        "config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
        "tokenizer_config.json"]
    assert dl.results["files_hash"]["sha256"] == hash_model_folder(tiny_model).sha256
    # the plan fetched config.json on its own, before the weights were asked for
    first_weights = next(i for i, r in enumerate(hub.requests) if "model.safetensors" in r)
    first_config = next(i for i, r in enumerate(hub.requests) if r.endswith("config.json"))
    assert first_config < first_weights
    for file in run_dir.rglob("*"):
        if file.is_file():
            assert TOKEN.encode() not in file.read_bytes(), file


def test_not_enough_disk_is_refused_before_downloading(tmp_path: Path,
                                                       tiny_model: Path) -> None:
    with FakeHub("org/tiny", tiny_model, TOKEN, size_boost=2**60) as hub:
        proc = run(tmp_path, hub, "[01_download]")
    assert proc.returncode == 1
    run_dir = run_day(tmp_path / "out") / "hub"
    sidecar = read_sidecar(run_dir / "01_download.json")
    assert sidecar.status == "failed" and sidecar.error is not None
    assert "GiB free" in sidecar.error.evalue and "model.include" in sidecar.error.evalue
    assert not any("resolve" in r and r.startswith("GET") for r in hub.requests)


def test_a_gguf_file_from_the_hub_is_what_launch_gets(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for quant in ("F16", "Q8_0"):
        (repo / f"tiny-{quant}.gguf").write_bytes(b"GGUF" + quant.encode() * 1000)
    (repo / "README.md").write_text("a GGUF repo")
    with FakeHub("org/tiny-GGUF", repo, TOKEN) as hub:
        proc = run(tmp_path, hub, "[01_download]", 'id: org/tiny-GGUF, revision: main, '
                   'format: gguf, include: ["*Q8_0.gguf"]')
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    run_dir = run_day(tmp_path / "out") / "hub"
    dl = read_sidecar(run_dir / "01_download.json").results
    assert Path(dl["model_path"]).name == "tiny-Q8_0.gguf"
    assert dl["files_hash"]["files"] == 1
    assert not any("F16" in r for r in hub.requests)  # only the file asked for
