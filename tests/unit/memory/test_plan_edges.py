"""benchlib.memory._plan at its edges: every setting the plan hands on (block size, batched
tokens, sequences, context, CUDA graphs, the GPU, a draft model, SGLang's TP and memory),
the warnings word for word, the checkpoint gap at exactly 5 %, weights exactly at the usable
memory, speculation without its k, MTP asked of a model without MTP layers, the MTP warning's
rounding, and the summary's rounding. Stored configs (tests/data/configs)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchlib.memory import PlanConfig, find_gpu, load_model_config, plan
from benchlib.memory._plan import Plan, sweep_max_model_len
from benchlib.memory._sglang import sglang_pool
from tests.unit.memory.test_plan_exact import CORPUS, DATA, GIB, LLAMA
from tests.unit.memory.test_plan_exact import _plan as _exact_plan


def _plan(model: Path = LLAMA, **kw: Any) -> Plan:
    """test_plan_exact's plan at a context of 8,192 unless told."""
    kw.setdefault("max_model_len", 8192)
    return _exact_plan(model, **kw)


def test_the_settings_reach_the_layout_and_the_overhead() -> None:
    p = _plan(gpu="H200", block_size=32, max_num_batched_tokens=4096, max_num_seqs=64)
    assert p.layout.block_size == 32 and p.capacity is not None
    assert p.capacity.block_size == 32
    assert (p.overhead.max_num_batched_tokens, p.overhead.max_num_seqs) == (4096, 64)
    # the default batched tokens are capped at seqs × this context, not at 4096's
    short = _plan(gpu="H200", max_num_seqs=1, max_model_len=2048)
    assert short.overhead.max_num_batched_tokens == 2048


def test_the_gpu_and_cuda_graphs_reach_the_overhead() -> None:
    moe = CORPUS / "qwen--qwen3-30b-a3b"  # V1 runner: a top-k buffer per SM, graphs
    a100 = _plan(moe, gpu="A100-80GB")
    assert a100.overhead.max_num_seqs == 256  # no A100 counts as big
    pcie = _plan(moe, gpu="H100-PCIe")
    assert pcie.overhead.parts["topk_buffer"] == round(114 * 151936 * 4 / GIB, 4)
    eager = _plan(moe, gpu="H200", cuda_graphs=False)
    assert eager.overhead.cuda_graph_gib == 0.0


def test_a_larger_draft_models_forward_sets_the_peak() -> None:
    small = CORPUS / "meta-llama--llama-3.2-1b-instruct"
    p = _plan(small, gpu="H200", speculative="draft", draft_model=LLAMA)
    assert p.overhead.parts["forward"] == round(2 * 8192 * (4096 + 3 * 14336) / GIB, 4)


def test_the_warnings_word_for_word() -> None:
    ds = _plan(CORPUS / "deepseek-ai--deepseek-v3", gpu="H200", num_gpus=8, max_model_len=4096)
    assert ("ready in: FP8 block-quantized weights make vLLM 0.26.0 warm up DeepGEMM kernels "
            "after sizing the KV cache (Qwen3-32B-FP8 on an H200: more than 3 minutes, 1,155 "
            "kernels); give the recipe's ready_timeout_s 600 s or more") in ds.warnings
    gdn = _plan(CORPUS / "qwen--qwen3.5-9b")
    assert (f"activation peak: the plan's {gdn.overhead.activation_gib:.2f} GiB is what vLLM "
            "0.26.0's source accounts for (its profile skips the Gated-DeltaNet kernels); on "
            "this family's cold starts vLLM logged about 2.0 GiB more (Qwen3.5-27B: 2.50 GiB on "
            "an H100, 2.73 with DFlash on an H100 and an H200), most likely its first "
            "torch.compile inside the profiling window: the predicted KV budget may be that "
            "much high; pass the engine's as --kv-budget-gib") in gdn.warnings


def test_the_checkpoints_kv_dtype_note() -> None:
    p = _plan(DATA / "quantized" / "nvidia--llama-3.1-8b-instruct-fp4", gpu="H200")
    assert p.weights.notes[0] == ("KV cache fp8: the checkpoint's KV quantization, which "
                                  "vLLM's --kv-cache-dtype auto follows")


def test_a_checkpoint_gap_of_exactly_5_percent_is_no_warning() -> None:
    """OPT-125m: 250478592 bytes, 21 × 11927552; an index of 20/21 of it is 5 % less."""
    a = load_model_config(CORPUS / "facebook--opt-125m" / "config.json")
    cfg = PlanConfig(model=CORPUS / "facebook--opt-125m", max_model_len=2048)
    total = plan(cfg, a).weights.total_bytes
    assert total == 21 * 11927552
    at = plan(cfg, a.model_copy(update={"checkpoint_bytes": 20 * 11927552}))
    assert not any("checkpoint index" in w for w in at.warnings)
    far = plan(cfg, a.model_copy(update={"checkpoint_bytes": int(total / 1.9)}))
    assert far.warnings == ["architecture estimate and checkpoint index differ by 90% (extra "
                            "tensors such as MTP or vision layers?)"]


def test_towers_of_0_405_b_parameters_round_up() -> None:
    a = load_model_config(LLAMA / "config.json").model_copy(update={"tower_params": 405_000_000})
    p = plan(PlanConfig(model=LLAMA, max_model_len=8192), a)
    assert p.warnings == ["vision/audio towers counted in the weights: 0.41 B parameters, "
                          "estimated from their shape"]
    text = plan(PlanConfig(model=LLAMA, max_model_len=8192, language_model_only=True), a)
    assert text.weights.notes[0].startswith("--language-model-only: the 0.41 B-parameter")


def test_weights_exactly_at_the_usable_memory_are_not_too_big() -> None:
    """With utilization 1 and memory = the weights, usable == weights: not 'weights alone'
    but no room left for the KV cache."""
    w = _plan().weights.per_gpu_bytes
    p = _plan(gpu_memory_gib=w / GIB, gpu_memory_utilization=1.0)
    assert p.usable_gib == p.weights.per_gpu_gib
    assert not p.fits and p.verdict.startswith("OOM risk: no memory left for the KV cache")


def test_speculating_without_k_adds_no_state() -> None:
    folder = CORPUS / "qwen--qwen3.5-9b"
    assert _plan(folder, speculative="ngram").layout.state_bytes_per_request == _plan(
        folder).layout.state_bytes_per_request


def test_mtp_asked_of_a_model_without_mtp_layers_loads_nothing() -> None:
    p = _plan(speculative="mtp")
    assert p.weights.notes == [] and p.weights.total_bytes == _plan().weights.total_bytes


def test_the_mtp_weights_split_over_a_tp_that_does_not_divide_them() -> None:
    folder = CORPUS / "deepseek-ai--deepseek-v3"
    off = _plan(folder, num_gpus=3, max_model_len=4096)
    on = _plan(folder, num_gpus=3, max_model_len=4096, speculative="mtp")
    extra = on.weights.total_bytes - off.weights.total_bytes
    assert extra % 3 and on.weights.per_gpu_bytes == off.weights.per_gpu_bytes + extra // 3


def test_sglangs_pool_is_sized_at_the_plans_tp_and_memory() -> None:
    gemma = CORPUS / "google--gemma-2-9b-it"
    p = _plan(gemma, gpu="H100-SXM", tp=2, sglang_pool=True, mem_fraction_static=0.85)
    a = load_model_config(gemma / "config.json")
    assert p.sglang == sglang_pool(a, weights_gib=p.weights.per_gpu_gib, tp=2,
                                   gpu_memory_gib=79.18, mem_fraction_static=0.85)
    assert p.sglang is not None and p.sglang.notes
    fp8 = _plan(gemma, gpu="H100-SXM", tp=2, sglang_pool=True, kv_cache_dtype="fp8")
    assert fp8.sglang is not None and fp8.sglang.cell_bytes * 2 == p.sglang.cell_bytes
    assert set(p.sglang.notes) <= set(p.warnings)
    none = _plan(sglang_pool=True).summary()
    assert none["sglang_mem_fraction_static"] is None
    assert none["sglang_max_total_num_tokens"] is None


def test_the_summary_rounds_to_its_digits() -> None:
    p = _plan(gpu="H100-SXM", decode_context=1000)
    s = p.summary()
    assert s["weights_gib_per_gpu"] == 14.958  # 14.9575…
    assert s["usable_gib_per_gpu"] == 72.846  # ceil(79.18 GiB × 0.92) = 72.8456… GiB
    assert s["usable_gib_per_gpu"] == round(math.ceil(79.18 * GIB * 0.92) / GIB, 3)
    assert s["decode_tokens_per_s_ceiling"] == round(p.decode[0].tokens_per_s, 1)
    assert s["decode_tokens_per_s_ceiling"] != round(p.decode[0].tokens_per_s)
    assert find_gpu("H100-SXM").memory_gib == 79.18


def test_the_sweep_uses_the_plans_batched_tokens() -> None:
    """gpt-oss-20b on a 44 GiB GPU: 2048 batched tokens bound its sliding layers' blocks."""
    p = _plan(DATA.parent / "vllm_logs" / "gpt-oss-20b-h100-tp1-u090", gpu="L40S",
              max_model_len=16384)
    assert p.overhead.max_num_batched_tokens == 2048 and p.capacity is not None
    [(_, tokens, conc)] = sweep_max_model_len(p, [16384])
    assert conc == p.capacity.max_concurrency and tokens == p.capacity.kv_cache_tokens


def test_the_mtp_note_rounds_its_billions() -> None:
    """1,135,000,000 MTP parameters print as 1.14 B."""
    from benchlib.memory._plan import _with_mtp

    p = _plan()
    params = p.params.model_copy(update={"mtp": 1_135_000_000})
    w = _with_mtp(p.weights, params, 1)
    assert w.notes[-1] == "1.14 B MTP parameters load for --speculative-config method mtp"


def test_the_mtp_warning_rounds_35_million_parameters_up(tmp_path: Path) -> None:
    """A Llama-shaped config with one MTP layer of exactly 35,000,000 parameters (hidden 1000,
    8 heads of 125, intermediate 9665: 4 M attention + 29 M gated MLP + 2 M projection + 5,000
    norms) is warned about as 0.04 B: the count divided by exactly 1e9, half rounded up."""
    cfg = json.loads((LLAMA / "config.json").read_text(encoding="utf-8"))
    cfg.update(hidden_size=1000, num_attention_heads=8, num_key_value_heads=8, head_dim=125,
               intermediate_size=9665, num_nextn_predict_layers=1)
    (tmp_path / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    p = _plan(tmp_path)
    assert p.params.mtp == 35_000_000
    assert p.warnings == ["1 MTP layer(s) (0.04 B parameters) not counted: serving with "
                          "--speculative-config method mtp adds about 0.07 GiB per GPU"]
