"""benchlib.memory._weights in exact bytes: every ``--weight-dtype``, every quantization format's
name and bytes per weight, the ignore lists' module patterns, the shards of each role under
tensor parallelism (replicated routers and norms, MLA's replicated down-projections, KV heads
copied past TP = KV heads), MXFP4's padding and a GGUF's split.

Parameter counts come from :func:`count_params` on stored configs (tests/data); the bytes are
worked out here from them by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.memory import count_params, load_model_config, weight_plan
from benchlib.memory._arch import ModelArch

DATA = Path(__file__).resolve().parents[2] / "data"
CORPUS = DATA / "configs" / "corpus"
GIB = 1024**3
LINEAR = ("attention", "linear_attn", "mlp", "experts", "shared_experts")


def _arch(name: str, **update: Any) -> ModelArch:
    return load_model_config(CORPUS / name / "config.json").model_copy(update=update)


LLAMA = _arch("meta-llama--llama-3.1-8b-instruct")
ROLES = count_params(LLAMA).by_role


def _quant(q: dict[str, Any], name: str = "meta-llama--llama-3.1-8b-instruct") -> ModelArch:
    return _arch(name, quantization=q)


@pytest.mark.parametrize("dtype,per", [
    ("fp8", 1 + 4 / 128**2), ("int8", 1.0), ("int4", 0.5 + 2 / 128),
    ("awq", 0.5 + 2 / 128 + 0.5 / 128), ("gptq", 0.5 + 2 / 128 + 0.5 / 128),
    ("nvfp4", 0.5 + 1 / 16), ("bnb-nf4", 0.5 + 1 / 64 + 4 / (64 * 256)), ("bnb-int8", 1.0)])
def test_a_weight_dtype_quantizes_the_linears_only(dtype: str, per: float) -> None:
    w = weight_plan(LLAMA, weight_dtype=dtype)
    assert w.scheme == dtype
    assert w.bytes_per_param == {r: (per if r in LINEAR else 2.0) for r in ROLES}
    assert w.bytes_by_role["mlp"] == int(ROLES["mlp"] * per)
    assert w.notes == [f"--weight-dtype {dtype} overrides the checkpoint's quantization_config"]
    assert w.high_precision == ["embed", "lm_head", "norm"]
    assert w.source == "architecture × " + dtype


def test_mxfp4_quantizes_the_experts_only() -> None:
    a = _arch("qwen--qwen3-30b-a3b")
    w = weight_plan(a, weight_dtype="mxfp4")
    assert w.bytes_per_param["experts"] == 0.5 + 1 / 32
    assert w.bytes_per_param["attention"] == 2.0
    assert weight_plan(LLAMA, weight_dtype="mxfp4").bytes_per_param["mlp"] == 2.0


@pytest.mark.parametrize("dtype,per", [("bf16", 2.0), ("fp16", 2.0), ("fp32", 4.0)])
def test_a_float_weight_dtype_sets_every_tensor(dtype: str, per: float) -> None:
    w = weight_plan(LLAMA, weight_dtype=dtype)
    assert w.scheme == dtype and w.bytes_per_param == dict.fromkeys(ROLES, per)
    assert w.total_bytes == sum(int(n * per) for n in ROLES.values())
    assert w.notes == [f"--weight-dtype {dtype}: every tensor"]


def test_an_unknown_weight_dtype_names_the_flag_and_the_choices() -> None:
    with pytest.raises(UsageError) as e:
        weight_plan(LLAMA, weight_dtype="int3")
    assert e.value.field == "--weight-dtype"
    assert "'int3': use one of auto, bf16, fp16, fp32, fp8, int8, int4" in str(e.value)


def test_an_unquantized_checkpoint_is_its_dtype() -> None:
    w = weight_plan(LLAMA)
    assert (w.scheme, w.notes, w.source) == ("bfloat16", [], "architecture × bfloat16")
    assert w.total_bytes == 2 * sum(ROLES.values()) == 16_060_522_496
    assert w.total_gib == w.total_bytes / GIB and w.per_gpu_gib == w.per_gpu_bytes / GIB
    olmo = weight_plan(_arch("allenai--olmo-2-1124-7b"))  # torch_dtype float32
    assert olmo.scheme == "fp32 loaded as bf16" and set(olmo.bytes_per_param.values()) == {2.0}


@pytest.mark.parametrize("q,name,per", [
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8 (block 128x128 scales)",
     1 + 4 / 128**2),
    ({"quant_method": "fp8", "weight_block_size": [64, 128]}, "fp8 (block 64x128 scales)",
     1 + 4 / (64 * 128)),
    ({"quant_method": "fp8"}, "fp8 (per-tensor scales)", 1.0),
    ({"quant_method": "FP8"}, "fp8 (per-tensor scales)", 1.0),
    ({"quant_method": "fbgemm_fp8"}, "fp8 (fbgemm, per-channel scales)", 1.0),
    ({"quant_method": "awq", "bits": 4, "group_size": 128}, "awq int4 (group 128)",
     0.5 + 2 / 128 + 0.5 / 128),
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "zero_point": False},
     "awq int4 (group 64)", 0.5 + 2 / 64),
    ({"quant_method": "awq_marlin", "bits": 4, "group_size": 128}, "awq int4 (group 128)",
     0.5 + 2 / 128 + 0.5 / 128),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128, "sym": True},
     "gptq int8 (group 128)", 1 + 2 / 128 + 1 / 128),
    ({"quant_method": "gptq_marlin", "bits": 4, "group_size": -1}, "gptq int4 (group 4096)",
     0.5 + 2 / 4096 + 0.5 / 4096),
    ({"quant_method": "auto-round", "bits": 4, "group_size": 128},
     "auto-round int4 (group 128)", 0.5 + 2 / 128 + 0.5 / 128),
    ({"quant_method": "gptq"}, "gptq int4 (group 128)", 0.5 + 2 / 128 + 0.5 / 128),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8 (ModelOpt, per-tensor scales)", 1.0),
    ({"quant_method": "modelopt", "quant_algo": "fp8_per_channel_per_token"},
     "fp8 (ModelOpt, per-channel scales)", 1.0),
    ({"quant_method": "modelopt", "quant_algo": "FP8_PB_WO", "declared_in": "x"},
     "fp8 (ModelOpt from hf_quant_config.json, 128x128 block scales)", 1 + 4 / 128**2),
    ({"quant_method": "modelopt_fp4", "quant_algo": "NVFP4"}, "nvfp4 (ModelOpt, group 16)",
     0.5 + 1 / 16),
    ({"quant_method": "nvfp4", "quant_algo": "NVFP4", "group_size": 32},
     "nvfp4 (ModelOpt, group 32)", 0.5 + 1 / 32),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "bitsandbytes int8", 1.0),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "bitsandbytes nf4", 0.5 + 4 / 64),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True},
     "bitsandbytes nf4 (double quant)", 0.5 + 1 / 64 + 4 / (64 * 256)),
])
def test_each_format_names_itself_and_counts_its_scales(q: dict[str, Any], name: str,
                                                        per: float) -> None:
    w = weight_plan(_quant(q))
    assert w.scheme == name and w.notes == []
    assert w.bytes_per_param == {r: (per if r in LINEAR else 2.0) for r in ROLES}


def _ct(weights: dict[str, Any], targets: list[str] | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {"weights": weights}
    if targets is not None:
        group["targets"] = targets
    return {"quant_method": "compressed-tensors", "config_groups": {"group_0": group}}


@pytest.mark.parametrize("weights,name,per", [
    ({"num_bits": 4, "type": "float", "group_size": 16}, "nvfp4 (compressed-tensors)",
     0.5 + 1 / 16),
    ({"num_bits": 4, "type": "float"}, "nvfp4 (compressed-tensors)", 0.5 + 1 / 16),
    ({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32},
     "int4 pack-quantized (group 32)", 0.5 + 2 / 32),
    ({"num_bits": 4, "strategy": "group"}, "int4 pack-quantized (group 128)", 0.5 + 2 / 128),
    ({"num_bits": 4, "strategy": "group", "symmetric": False},
     "int4 pack-quantized (group 128)", 0.5 + 2 / 128 + 0.5 / 128),
    ({"num_bits": 4, "strategy": "channel", "group_size": 64}, "int4", 0.5 + 2 / 64),
    ({"num_bits": 8, "type": "float", "strategy": "tensor"},
     "fp8 (compressed-tensors, tensor scales)", 1.0),
    ({"num_bits": 8, "type": "float"}, "fp8 (compressed-tensors, channel scales)", 1.0),
    ({"num_bits": 8, "type": "int"}, "int8 (compressed-tensors)", 1.0),
    ({}, "int8 (compressed-tensors)", 1.0),
])
def test_compressed_tensors_schemes(weights: dict[str, Any], name: str, per: float) -> None:
    w = weight_plan(_quant(_ct(weights)))
    assert w.scheme == name
    assert w.bytes_per_param == {r: (per if r in LINEAR else 2.0) for r in ROLES}


def test_compressed_tensors_without_groups_is_int8() -> None:
    assert weight_plan(_quant({"quant_method": "compressed-tensors"})).scheme == (
        "int8 (compressed-tensors)")


@pytest.mark.parametrize("targets,quantized", [
    (["Linear"], set(LINEAR)),
    (["re:.*experts.*"], {"experts"}),
    (["re:.*mlp.experts.*", "re:.*shared_expert.*"], {"experts", "shared_experts"}),
])
def test_compressed_tensors_targets(targets: list[str], quantized: set[str]) -> None:
    w = weight_plan(_quant(_ct({"num_bits": 8, "type": "float"}, targets),
                           "deepseek-ai--deepseek-v2-lite-chat"))
    assert {r for r, b in w.bytes_per_param.items() if b == 1.0} == quantized


def test_an_unknown_method_is_counted_as_bf16_and_says_so() -> None:
    w = weight_plan(_quant({"quant_method": "hqq"}))
    assert w.scheme == "bfloat16" and set(w.bytes_per_param.values()) == {2.0}
    assert w.notes == ["quant_method 'hqq' is unknown here: weights counted as bf16"]


@pytest.mark.parametrize("key", ["ignore", "modules_to_not_convert", "ignored_layers",
                                 "exclude_modules", "llm_int8_skip_modules"])
def test_every_ignore_key_keeps_its_modules_in_bf16(key: str) -> None:
    w = weight_plan(_quant({"quant_method": "fp8", key: ["model.layers.0.self_attn.q_proj"]}))
    assert w.bytes_per_param["attention"] == 2.0 and w.bytes_per_param["mlp"] == 1.0
    assert w.notes == ["kept in high precision by the config's ignore list: attention"]
    assert w.high_precision == ["attention", "embed", "lm_head", "norm"]


@pytest.mark.parametrize("pattern,kept", [
    ("lm_head", []),  # not quantized anyway: present, but no change in bytes
    ("model.embed_tokens", []),
    ("re:.*shared_expert.*", ["shared_experts"]),
    ("re:.*self_attn.*", ["attention", "linear_attn"]),  # an attention pattern covers both
    ("model.layers.3.attention.wq", ["attention", "linear_attn"]),
    ("transformer.h.0.attn.c_attn", ["attention", "linear_attn"]),
    ("re:.*mlp.gate$", []),
    ("model.layers.1.mlp.gate", []),
    ("model.layers.1.mlp.gate_proj", []),
    ("model.layers.0.mlp.down_proj", ["mlp"]),
    ("model.layers.5.mlp.dense_h_to_4h", ["mlp"]),
    ("model.norm", []),
])
def test_which_roles_an_ignore_pattern_keeps(pattern: str, kept: list[str]) -> None:
    """On DeepSeek-V2-Lite (MLA, a dense first layer, shared and routed experts, a router)."""
    w = weight_plan(_quant({"quant_method": "fp8", "ignore": [pattern]},
                           "deepseek-ai--deepseek-v2-lite-chat"))
    assert sorted(r for r in LINEAR if w.bytes_per_param[r] == 2.0) == kept


@pytest.mark.parametrize("pattern,note", [
    ("lm_head", "lm_head"), ("model.embed_tokens", "embed"), ("re:.*mlp.gate$", "router"),
    ("model.layers.1.mlp.gate", "router"), ("re:.*router.*", "router"),
    ("model.layers.1.mlp.gate.weight", "router"),
    ("re:.*shared_expert.*", "shared_experts")])
def test_an_ignore_note_names_the_present_roles(pattern: str, note: str) -> None:
    w = weight_plan(_quant({"quant_method": "fp8", "ignore": [pattern]},
                           "deepseek-ai--deepseek-v2-lite-chat"))
    assert w.notes == [f"kept in high precision by the config's ignore list: {note}"]


def test_an_ignore_list_of_absent_roles_says_nothing() -> None:
    w = weight_plan(_quant({"quant_method": "fp8", "ignore": ["re:.*mlp.gate$", "foo"]}))
    assert w.notes == []  # Llama has no router


def test_tp_shards_linears_and_replicates_norms_and_routers() -> None:
    by = weight_plan(LLAMA).bytes_by_role
    w2 = weight_plan(LLAMA, tp=2)
    assert w2.per_gpu_bytes == (by["embed"] + by["lm_head"] + by["attention"] + by["mlp"]) // 2 \
        + by["norm"]
    moe = _arch("qwen--qwen3-30b-a3b")
    one, two = weight_plan(moe), weight_plan(moe, tp=2)
    b = one.bytes_by_role
    assert two.per_gpu_bytes == int(sum(v for r, v in b.items() if r not in ("router", "norm"))
                                    / 2 + b["router"] + b["norm"])
    assert two.experts_per_gpu_bytes == b["experts"] // 2
    assert one.per_gpu_bytes == one.total_bytes and one.experts_per_gpu_bytes == b["experts"]


def test_kv_projections_copy_past_tp_equal_kv_heads() -> None:
    """TP 16 on 8 KV heads: K and V (2 × 4096 × 128 × 8 per layer, 32 layers, bf16) are kept
    twice over; the rest of attention splits 16 ways."""
    att = weight_plan(LLAMA).bytes_by_role["attention"]
    kv = 2 * 4096 * 128 * 8 * 2 * 32
    w16 = weight_plan(LLAMA, tp=16)
    w8 = weight_plan(LLAMA, tp=8)
    rest = sum(v for r, v in weight_plan(LLAMA).bytes_by_role.items() if r != "attention")
    norm = weight_plan(LLAMA).bytes_by_role["norm"]
    assert w16.per_gpu_bytes == int((att - kv) / 16 + kv * 2 / 16 + (rest - norm) / 16 + norm)
    assert w8.per_gpu_bytes == int(att / 8 + (rest - norm) / 8 + norm)


def test_mla_down_projections_are_replicated_on_every_rank() -> None:
    """DeepSeek-V2-Lite: kv_a (512 + 64) × 2048 per layer, no q_lora, 27 MLA layers, bf16."""
    a = _arch("deepseek-ai--deepseek-v2-lite-chat")
    b = weight_plan(a).bytes_by_role
    rep = 2048 * (512 + 64) * 2 * 27
    others = sum(v for r, v in b.items() if r not in ("attention", "router", "norm"))
    assert weight_plan(a, tp=2).per_gpu_bytes == int(
        rep + (b["attention"] - rep) / 2 + others / 2 + b["router"] + b["norm"])
    glm = _arch("zai-org--glm-4.7-flash")  # q_lora 768
    g = weight_plan(glm).bytes_by_role
    grep = 2048 * (768 + 512 + 64) * 2 * 47
    gothers = sum(v for r, v in g.items() if r not in ("attention", "router", "norm"))
    assert weight_plan(glm, tp=4).per_gpu_bytes == int(
        grep + (g["attention"] - grep) / 4 + gothers / 4 + g["router"] + g["norm"])


@pytest.mark.parametrize("tp,pad", [(1, 3072 / 2880), (4, 3072 / 2880 * 768 / 720)])
def test_gpt_oss_mxfp4_experts_pad_per_rank(tp: int, pad: float) -> None:
    """gpt-oss-20b: hidden 2880 pads to 3072; a rank's 2880 / tp expert slice to a multiple
    of 64 (720 → 768 at TP 4)."""
    a = load_model_config(DATA / "vllm_logs" / "gpt-oss-20b-h100-tp1-u090")
    w = weight_plan(a, tp=tp)
    experts = w.bytes_by_role["experts"]
    assert w.experts_per_gpu_bytes == int(experts / tp * pad)
    assert w.notes[0] == (f"vLLM pads MXFP4 expert matrices by {100 * (pad - 1):.1f}% "
                          f"at TP {tp}")


def test_mxfp4_on_a_dense_model_pads_nothing() -> None:
    w = weight_plan(_quant({"quant_method": "mxfp4"}))
    assert w.scheme == "mxfp4 experts, rest bf16" and w.notes == []


def test_the_checkpoint_index_is_compared_with_the_estimate() -> None:
    total = weight_plan(LLAMA).total_bytes
    w = weight_plan(LLAMA.model_copy(update={"checkpoint_bytes": total // 2}))
    assert w.notes == [f"checkpoint index says {total // 2 / GIB:.2f} GiB; the architecture "
                       f"estimate is {total / GIB:.2f} GiB (+100.0%)"]


def test_a_gguf_splits_its_exact_bytes_by_parameters() -> None:
    nbytes = 8_000_000_000
    a = LLAMA.model_copy(update={"quantization": {"quant_method": "gguf", "file_type": "Q8_0"},
                                 "checkpoint_bytes": nbytes})
    n = sum(ROLES.values())
    w = weight_plan(a, tp=2)
    assert (w.scheme, w.total_bytes, w.per_gpu_bytes) == ("gguf Q8_0", nbytes, nbytes // 2)
    assert w.bytes_by_role == {r: nbytes * c // n for r, c in ROLES.items()}
    assert w.bytes_per_param == dict.fromkeys(ROLES, nbytes / n)
    assert (w.high_precision, w.source) == (["norm"], "GGUF tensor bytes")
    assert w.notes == ["roles split in proportion to their parameters"]
    assert w.experts_per_gpu_bytes == 0
    forced = weight_plan(a, weight_dtype="fp8")
    assert forced.scheme == "fp8"
    unsized = weight_plan(a.model_copy(update={"checkpoint_bytes": None}))
    assert unsized.notes[0] == "quant_method 'gguf' is unknown here: weights counted as bf16"


def test_a_gguf_moe_divides_its_experts_by_tp() -> None:
    a = _arch("qwen--qwen3-30b-a3b", quantization={"quant_method": "gguf"},
              checkpoint_bytes=30_000_000_000)
    roles = count_params(a).by_role
    w = weight_plan(a, tp=4)
    assert w.scheme == "gguf ?"
    assert w.experts_per_gpu_bytes == 30_000_000_000 * roles["experts"] // sum(
        roles.values()) // 4
