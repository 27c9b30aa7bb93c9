"""A recipe with variants end to end: each variant in its own folder with its own steps,
one after another, 04_compare setting them side by side; and the fair-A/B check refusing
(exit 2, the setting named) a variant that differs where the recipe did not say it may.

The variants here are ``endpoint`` engines on scripted servers (the instrument whose
behaviour is known); the demo test runs the same path on vLLM CPU and llama.cpp."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib.engines import free_port
from benchlib.pipeline import read_sidecar
from tests._runs import run_day

REPO = Path(__file__).resolve().parents[2]
PER_VARIANT = ["00_plan", "01_download", "02_launch", "03_measure"]


def _recipe(tmp_path: Path, tiny_model: Path, url_a: str, url_b: str, extra: str = "") -> Path:
    path = tmp_path / "ab.yaml"
    path.write_text(f"""\
name: ab
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: endpoint, base_url: "{url_a}"}}
variants:
  - {{name: a}}
  - {{name: b, engine: {{kind: endpoint, base_url: "{url_b}"}}}}
scenarios:
  - {{name: chat, endpoint: chat, input_len: 16, output_len: 8, concurrencies: [1, 2],
      num_prompts: 2}}
{extra}""")
    return path


def _run(path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlib", "run", str(path), "--outputs",
                           str(out), *extra], capture_output=True, text=True, cwd=REPO,
                          timeout=300, env=dict(os.environ))


def _run_dir(out: Path) -> Path:
    return run_day(out) / "ab"


def test_two_variants_run_in_turn_and_are_compared(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    a = scripted("--ttft-ms", "5", "--itl-ms", "2", "--model", "scripted")
    b = scripted("--ttft-ms", "5", "--itl-ms", "4", "--model", "scripted")
    proc = _run(_recipe(tmp_path, tiny_model, a.url, b.url), tmp_path / "out")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = _run_dir(tmp_path / "out")
    for variant in ("a", "b"):
        assert json.loads((run / variant / "recipe.json").read_text())["variants"] == []
        for step in PER_VARIANT:
            assert read_sidecar(run / variant / f"{step}.json").status == "ok", (variant, step)
        probe = read_sidecar(run / variant / "02_launch.json").results["probe"]
        assert probe[0]["output_tokens"] == probe[0]["max_tokens"] == 16
        assert probe[0]["output_tokens_source"] == "usage"
    assert not (run / "03_measure.json").exists()  # per-variant steps live in the variants
    compare = read_sidecar(run / "04_compare.json")
    assert compare.status == "ok"
    rows = compare.results["variants"]
    assert [(r["variant"], r["concurrency"]) for r in rows] == [
        ("a", 1), ("a", 2), ("b", 1), ("b", 2)]
    tpot = {r["variant"]: r["median_tpot_ms"] for r in rows if r["concurrency"] == 1}
    assert 1.5 < tpot["a"] < 3.0 and 3.5 < tpot["b"] < 5.5, tpot  # each its own server
    assert (run / "variants.png").stat().st_size > 10_000
    state = json.loads((run / "run.json").read_text())
    assert state["finished"] and set(state["statuses"]) == {
        *(f"{v}/{s}" for v in "ab" for s in PER_VARIANT), "04_compare"}
    assert "[b] 03_measure: ok" in proc.stdout and "variants side by side" in proc.stdout
    # the prompts were the same for both (same tokenizer and seed)
    digests = {json.loads((run / v / "measure" / "chat-c1.json").read_text())["benchlib"]
               ["prompts_sha256"] for v in "ab"}
    assert len(digests) == 1 and None not in digests


def test_undeclared_difference_in_the_recipe_is_refused_before_anything_starts(
        tmp_path: Path, tiny_model: Path) -> None:
    path = _recipe(tmp_path, tiny_model, "http://127.0.0.1:9", "http://127.0.0.1:9")
    text = path.read_text().replace("- {name: b, engine: {kind: endpoint, ",
                                    "- {name: b, engine: {kind: endpoint, max_model_len: 512, ")
    path.write_text(text)
    proc = _run(path, tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "context" in proc.stderr and "compare.differences" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
    path.write_text(text + "compare: {differences: [context]}\n")
    checked = subprocess.run([sys.executable, "-m", "benchlib", "run", str(path), "--check"],
                             capture_output=True, text=True, cwd=REPO, timeout=60)
    assert checked.returncode == 0, checked.stderr


def test_engine_that_differs_on_the_probe_is_refused_before_it_measures(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    a = scripted("--ttft-ms", "2", "--itl-ms", "1", "--model", "scripted")
    b = scripted("--ttft-ms", "2", "--itl-ms", "1", "--model", "scripted", "--no-usage")
    path = _recipe(tmp_path, tiny_model, a.url, b.url)
    # run in two parts (--variants): b is held to a's stored probe all the same
    first = _run(path, tmp_path / "out", "--variants", "a")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    proc = _run(path, tmp_path / "out", "--variants", "b")
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "usage" in proc.stderr and "compare.differences" in proc.stderr
    assert "b against a" in proc.stderr
    run = _run_dir(tmp_path / "out")
    assert read_sidecar(run / "a" / "03_measure.json").status == "ok"  # kept
    assert not (run / "b" / "03_measure.json").exists()  # never measured
    assert not json.loads((run / "run.json").read_text())["finished"]


def test_engine_that_ignores_max_tokens_cannot_be_declared_away(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    a = scripted("--ttft-ms", "2", "--itl-ms", "1", "--model", "scripted")
    b = scripted("--ttft-ms", "2", "--itl-ms", "1", "--model", "scripted",
                 "--output-tokens", "5")
    path = _recipe(tmp_path, tiny_model, a.url, b.url,
                   "compare: {differences: [usage, tokenizer, chat_template]}\n")
    proc = _run(path, tmp_path / "out")
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "does not honour max_tokens" in proc.stderr


def test_a_run_resumes_per_variant(scripted: Callable[..., Any], tmp_path: Path,
                                   tiny_model: Path) -> None:
    a = scripted("--ttft-ms", "2", "--itl-ms", "1", "--model", "scripted")
    port = free_port()
    path = _recipe(tmp_path, tiny_model, a.url, f"http://127.0.0.1:{port}")
    for check in ((), ("--check",)):  # a typo is named before anything starts
        typo = _run(path, tmp_path / "out", "--variants", "a,c", *check)
        assert typo.returncode == 2 and "--variants" in typo.stderr and "a, b" in typo.stderr
    # --variants a: a alone now, b left for later, the comparison waits for it
    only_a = _run(path, tmp_path / "out", "--variants", "a")
    assert only_a.returncode == 0, only_a.stdout[-3000:] + only_a.stderr[-3000:]
    run = _run_dir(tmp_path / "out")
    assert read_sidecar(run / "a" / "03_measure.json").status == "ok"
    assert not (run / "b" / "02_launch.json").exists()
    assert not (run / "04_compare.json").exists()
    assert "left for a later run (--variants): b" in only_a.stdout
    assert not json.loads((run / "run.json").read_text())["finished"]
    first = _run(path, tmp_path / "out")  # b answers nothing yet
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    assert "[a] 03_measure: ok in an earlier attempt, skipped" in first.stdout
    assert read_sidecar(run / "b" / "02_launch.json").status == "failed"
    assert read_sidecar(run / "b" / "03_measure.json").status == "skipped"
    scripted("--ttft-ms", "2", "--itl-ms", "1", "--model", "scripted", "--port", str(port))
    # b alone: a was attempted, so the run-wide steps run, and a's statuses stay recorded
    second = _run(path, tmp_path / "out", "--variants", "b")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "[a]" not in second.stdout
    assert "[b] 03_measure: ok" in second.stdout and "resuming" in second.stdout
    assert (run / "b" / "02_launch.attempt-1.json").is_file()  # the failed attempt kept
    state = json.loads((run / "run.json").read_text())
    assert state["finished"] and state["statuses"]["a/03_measure"] == "ok"
    assert read_sidecar(run / "04_compare.json").status == "ok"
