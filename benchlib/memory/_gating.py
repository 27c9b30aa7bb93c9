"""Whether a model's feed-forward blocks have a gate: three matrices (gate, up, down) or two.

A gated MLP (SwiGLU, GeGLU) multiplies an activated gate projection by an up projection; an
ungated one applies its activation to a single up projection. At the same width the ungated
block holds two thirds of the parameters, and in an MoE that difference is most of the model:
counting Nemotron-3-Nano's squared-ReLU experts as gated gives 46.5 B parameters for a 31.6 B
checkpoint. The rule is the same for dense MLPs, routed experts and shared experts, because
every family builds all three from one MLP shape. It is read in this order:

1. **the model type's own rule** — the families whose MLP modules vLLM builds without a gate
   (:data:`UNGATED_TYPES`): the GPT-2 era (``c_fc``/``fc1`` + ``c_proj``/``fc2``), Nemotron
   and Nemotron-H (``up_proj`` + ``down_proj`` with squared ReLU, and FusedMoE told
   ``activation_without_mul``), AFM/Arcee, Jais 2 and Apertus;
2. **the activation the config names for its MLPs** (``mlp_hidden_act``, then ``hidden_act``,
   ``hidden_activation``, ``activation_function``): squared ReLU and xIELU
   (:data:`UNGATED_ACTIVATIONS`) are used without a gate by every vLLM model that has them,
   so a variant whose ``model_type`` the table does not know yet still counts right;
3. otherwise **gated**, the Llama-style default (SiLU and GELU are used both ways, so they
   decide nothing on their own).

Sources (vLLM 0.26.0, ``vllm/model_executor/models/``): ``nemotron_h.py`` L85-122
(``NemotronHMLP``: up_proj, ReLU², down_proj), L226 (experts built with
``activation_without_mul(config.mlp_hidden_act)``) and L712 (``is_non_gated_moe = True``, the
one model class that says so); ``nemotron.py`` L109-134
(``NemotronMLP``); ``arcee.py`` L48-87; ``jais2.py`` L68-93; ``apertus.py`` L77-109 (xIELU);
``phi.py`` L139-151 (fc1/fc2); the gated/ungated MoE kernels are told apart in
``vllm/model_executor/layers/fused_moe/activation.py`` (``MoEActivation.is_gated``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["UNGATED_ACTIVATIONS", "UNGATED_TYPES", "feed_forward_is_gated"]

#: model types whose MLPs (and experts, where they have them) are up + down, no gate
UNGATED_TYPES = frozenset({
    "gpt2", "opt", "bloom", "gpt_neox", "falcon", "phi", "starcoder2", "gpt_bigcode", "mpt",
    "gptj", "codegen", "gpt_neo", "biogpt", "xglm",
    "nemotron", "nemotron_h", "arcee", "jais2", "apertus",
})
#: activations only ever applied to a single up projection (squared ReLU, xIELU)
UNGATED_ACTIVATIONS = frozenset({"relu2", "relu_squared", "squared_relu", "xielu"})
#: config keys that name the MLP activation, most specific first
_ACTIVATION_KEYS = ("mlp_hidden_act", "hidden_act", "hidden_activation", "activation_function")


def _activation(cfg: dict[str, Any]) -> str | None:
    for key in _ACTIVATION_KEYS:
        value = cfg.get(key)
        if isinstance(value, str) and value:
            return value.lower()
    return None


def feed_forward_is_gated(cfg: dict[str, Any]) -> bool:
    """True when the model's MLPs and experts have a gate projection (three matrices), False
    when they are up + down only; ``cfg`` is the filled config dict (``model_type`` included)."""
    if str(cfg.get("model_type", "")) in UNGATED_TYPES:
        return False
    return _activation(cfg) not in UNGATED_ACTIVATIONS
