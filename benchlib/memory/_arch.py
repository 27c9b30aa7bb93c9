"""A model's architecture as the memory math needs it: the specs (:class:`ModelArch` and its
parts), filled from a Hugging Face ``config.json`` by :mod:`benchlib.memory._arch_read`.

One reader covers the families whose caches differ in kind, not just in size: dense GQA
(Llama, Qwen), sliding-window hybrids (gpt-oss, Gemma, Mistral), MLA (DeepSeek, Kimi, GLM-5),
hybrid linear attention (Qwen3-Next's Gated DeltaNet, Kimi-Linear's KDA) and MoE on top of any
of them, Mamba hybrids (Jamba, Nemotron-H, Granite-4.0-H, Bamba, Falcon-H1, LFM2) and
interleaved MoE (Llama 4, Qwen MoE's sparse steps, DeepSeek's dense first layers). Each layer
gets a mixer kind and a feed-forward kind (:mod:`benchlib.memory._layers`) because those, not
the model's name, decide its weights and how vLLM sizes its cache. Defaults a config leaves
out are filled by transformers' config class first (:mod:`benchlib.memory._hf_config`).

Parsing a config already loaded as a dict is :mod:`benchlib.memory._arch_read`'s job;
finding and opening the file (a folder, a ``config.json`` or a GGUF) is
:mod:`benchlib.memory._load`'s, so the GGUF reader can build on the parser without a loop.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from benchlib.memory._layers import FfnKind, LayerKind

__all__ = [
    "FfnKind",
    "LayerKind",
    "LinearAttnSpec",
    "MLASpec",
    "MambaSpec",
    "MoESpec",
    "ModelArch",
]


class MLASpec(BaseModel):
    """Multi-head latent attention: the cache holds one latent (``kv_lora_rank``) plus the
    shared RoPE key (``qk_rope_head_dim``) per token and layer, whatever the head count."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None
    #: DeepSeek-V3.2 / GLM-5 sparse attention (DSA): the indexer keeps its own key cache
    index_head_dim: int | None = None
    index_n_heads: int | None = None
    #: IndexCache / IndexShare (GLM-5.2: 4, offset 3): only every ``index_topk_freq``-th
    #: layer builds an indexer, the others reuse its top-k; 1 (DeepSeek-V3.2) is every layer
    index_topk_freq: int = 1
    index_skip_topk_offset: int = 2
    #: per-layer ``"F"`` (own indexer) / ``"S"`` (shared), overriding freq and offset
    index_topk_pattern: str | None = None

    def has_indexer(self, layer: int, num_layers: int) -> bool:
        """Whether decoder layer ``layer`` builds its own indexer (and keeps its key cache),
        by vLLM's rule (``DeepseekV2MLAAttention``: ``max(layer - offset + 1, 0) % freq``
        selects, a pattern's ``"S"`` skips); MTP layers (``layer >= num_layers``) always do."""
        if not self.index_head_dim:
            return False
        if layer >= num_layers:
            return True
        if self.index_topk_pattern is not None:
            return not (layer < len(self.index_topk_pattern)
                        and self.index_topk_pattern[layer] == "S")
        return max(layer - self.index_skip_topk_offset + 1, 0) % self.index_topk_freq == 0


class MoESpec(BaseModel):
    """Mixture of experts: which layers route, how many experts, how many each token uses."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    num_experts: int
    top_k: int
    expert_intermediate_size: int
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0
    expert_bias: bool = False
    #: experts have a gate (gate, up, down), or up and down only (see ``_gating``)
    gated: bool = True


class LinearAttnSpec(BaseModel):
    """A linear-attention (recurrent) layer: a fixed state per request, none per token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["gdn", "kda"]
    num_v_heads: int
    head_v_dim: int
    num_k_heads: int
    head_k_dim: int
    conv_kernel: int
    #: KDA keeps its recurrent state in float32 in vLLM; Gated DeltaNet in the model dtype
    #: unless the config's ``mamba_ssm_dtype`` says float32 (Qwen3.5)
    recurrent_fp32: bool


class MambaSpec(BaseModel):
    """A Mamba mixer (or LFM2's gated short convolution): weights by variant, and a fixed
    state per request (a convolution window plus, for Mamba, the SSM state)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["mamba1", "mamba2", "shortconv"]
    d_inner: int
    d_state: int
    d_conv: int
    n_heads: int = 0
    n_groups: int = 1
    dt_rank: int = 0
    conv_bias: bool = True
    proj_bias: bool = False
    #: the SSM state kept in float32 (``mamba_ssm_cache_dtype``), else the model dtype
    state_fp32: bool = False

    @property
    def conv_dim(self) -> int:
        """Channels the convolution runs over (x, plus B and C for Mamba 2)."""
        if self.kind == "mamba2":
            return self.d_inner + 2 * self.n_groups * self.d_state
        return self.d_inner


class ModelArch(BaseModel):
    """Everything about a model that decides its weights, KV cache and decode traffic."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model_type: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    tie_embeddings: bool = False
    attention_bias: bool = False
    #: the MLP is gated (gate, up, down: SwiGLU / GeGLU); GPT-2-era families and squared-ReLU
    #: ones have two matrices (:mod:`benchlib.memory._gating`)
    gated_mlp: bool = True
    mlp_bias: bool = False
    #: learned absolute position embeddings (rows of ``hidden_size``; 0 for RoPE / ALiBi)
    learned_positions: int = 0
    #: LayerNorm with a bias (2 vectors a norm) rather than RMSNorm (1)
    norm_bias: bool = False
    #: attention's output is gated by a second query-sized projection (Qwen3-Next, Qwen3.5)
    attn_output_gate: bool = False
    #: each layer's mixer: what it keeps per token (attention) or per request (recurrent)
    layer_kinds: tuple[LayerKind, ...]
    #: each layer's feed-forward (empty: every layer dense, or MoE when ``moe`` is set)
    ffn_kinds: tuple[FfnKind, ...] = ()
    sliding_window: int | None = None
    mla: MLASpec | None = None
    moe: MoESpec | None = None
    linear: LinearAttnSpec | None = None
    mamba: MambaSpec | None = None
    #: every layer runs a Mamba mixer beside its attention (Falcon-H1)
    parallel_mamba: bool = False
    #: parameters of vision / audio towers and their projectors (loaded with the weights)
    tower_params: int = 0
    #: where the defaults came from ("transformers 5.24.0 Qwen3MoeConfig" or "as written")
    defaults_from: str = "as written"
    #: keys the config left out and neither it nor a config class gave: the value assumed
    assumed: tuple[str, ...] = ()
    torch_dtype: str = "bfloat16"
    max_position_embeddings: int | None = None
    quantization: dict[str, Any] | None = None
    #: ``model.safetensors.index.json`` metadata next to the config, when there is one
    checkpoint_bytes: int | None = None
    checkpoint_params: int | None = None
    #: multi-token-prediction layers shipped in the checkpoint (loaded only for MTP decoding)
    mtp_layers: int = 0

    def count(self, kind: LayerKind) -> int:
        return sum(1 for k in self.layer_kinds if k == kind)

    def ffn(self, index: int) -> FfnKind:
        """Layer ``index``'s feed-forward."""
        if self.ffn_kinds:
            return self.ffn_kinds[index]
        return "moe" if self.moe is not None else "dense"

    def is_moe_layer(self, index: int) -> bool:
        return self.ffn(index) == "moe"
