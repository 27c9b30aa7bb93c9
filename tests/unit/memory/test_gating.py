"""Feed-forward blocks without a gate: the model type's own rule, the MLP activation, and the
parameter count of dense MLPs, routed experts and shared experts that follows (issue: the plan
counted Nemotron-3-Nano's squared-ReLU experts as gated, 46.5 B against the published 31.6 B)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchlib.memory import PlanConfig, plan
from benchlib.memory._arch_read import arch_from_dict
from benchlib.memory._gating import feed_forward_is_gated
from benchlib.memory._params import count_params

CORPUS = Path(__file__).resolve().parents[2] / "data" / "configs" / "corpus"
NANO = CORPUS / "nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16"


@pytest.mark.parametrize(("cfg", "gated"), [
    ({"model_type": "llama", "hidden_act": "silu"}, True),
    ({"model_type": "gemma", "hidden_act": "gelu_pytorch_tanh"}, True),  # GeGLU: gelu is gated
    ({"model_type": "gpt2", "activation_function": "gelu_new"}, False),  # the type decides
    ({"model_type": "nemotron_h", "mlp_hidden_act": "silu"}, False),  # the type decides
    ({"model_type": "nemotron"}, False),
    ({"model_type": "some_new_hybrid", "mlp_hidden_act": "relu2"}, False),  # the activation
    ({"model_type": "some_new_dense", "hidden_act": "ReLU2"}, False),
    ({"model_type": "some_new_dense", "hidden_activation": "xielu"}, False),
    ({"model_type": "some_new_dense"}, True),  # nothing said: the SwiGLU default
])
def test_the_type_rule_then_the_activation_decide(cfg: dict[str, Any], gated: bool) -> None:
    assert feed_forward_is_gated(cfg) is gated


def _hybrid(**overrides: Any) -> dict[str, Any]:
    """A small Nemotron-H-shaped config: Mamba, dense MLP, attention and MoE layers."""
    raw: dict[str, Any] = {
        "model_type": "nemotron_h", "hybrid_override_pattern": "M-*E", "num_hidden_layers": 4,
        "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
        "vocab_size": 1000, "intermediate_size": 1024, "mamba_num_heads": 8,
        "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4,
        "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 96,
        "n_shared_experts": 1, "moe_shared_expert_intermediate_size": 192,
        "mlp_hidden_act": "relu2", "tie_word_embeddings": False}
    raw.update(overrides)
    return raw


@pytest.mark.parametrize("fill", [True, False])
def test_ungated_experts_shared_experts_and_mlps_have_two_matrices(fill: bool) -> None:
    a = arch_from_dict(_hybrid(), name="nemotron-h", fill=fill)
    assert a.moe is not None and not a.moe.gated and not a.gated_mlp
    p = count_params(a)
    h = a.hidden_size
    assert p.expert_params == 2 * h * 96
    assert p.by_role["experts"] == 8 * 2 * h * 96
    assert p.by_role["shared_experts"] == 2 * h * 192
    assert p.by_role["mlp"] == 2 * h * 1024  # the one "-" layer


def test_the_same_shapes_gated_hold_half_as_much_again() -> None:
    # one config, read once as Nemotron-H (no gate) and once as a SwiGLU model type
    ungated = count_params(arch_from_dict(_hybrid(), name="ungated", fill=False))
    gated = count_params(arch_from_dict(_hybrid(model_type="other_hybrid", mlp_hidden_act="silu"),
                                        name="gated", fill=False))
    for role in ("experts", "shared_experts", "mlp"):
        assert 2 * gated.by_role[role] == 3 * ungated.by_role[role]
    for role in ("attention", "mamba", "embed", "router"):
        assert gated.by_role[role] == ungated.by_role[role]


def test_expert_biases_follow_the_gate() -> None:
    # gpt-oss style biases: a gated expert has gate+up biases (2 x inter) and a down bias (h)
    a = arch_from_dict({"model_type": "gpt_oss", "num_hidden_layers": 1, "hidden_size": 64,
                        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16,
                        "vocab_size": 100, "num_local_experts": 4, "num_experts_per_tok": 1,
                        "intermediate_size": 32}, fill=False)
    assert count_params(a).expert_params == 3 * 64 * 32 + 2 * 32 + 64


def test_nemotron_3_nano_plans_to_its_published_31_6_b() -> None:
    # the acceptance: benchlib plan on the real config, 31.6 B ± 3 %
    p = plan(PlanConfig(model=NANO, gpu="H200", vllm_version="0.26.0", max_model_len=4096))
    assert p.params.total == pytest.approx(31.6e9, rel=0.03)
    assert p.arch.moe is not None and not p.arch.moe.gated
    assert p.fits
