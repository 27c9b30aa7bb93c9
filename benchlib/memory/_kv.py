"""KV cache as vLLM sizes it: bytes per layer per GPU, blocks, groups and the token count.

Per layer and GPU (``vllm/v1/kv_cache_interface.py``):

* full / sliding attention: ``2 × max(1, kv_heads // tp) × head_dim × dtype_bytes`` per token;
* MLA: ``(kv_lora_rank + qk_rope_head_dim) × dtype_bytes`` per token on **every** rank (one
  latent per token, not per head, so TP does not split it); DeepSeek-V3.2-style sparse
  attention adds the indexer's FP8 key (``index_head_dim`` + a 4-byte scale) per token;
* sliding window: a request holds at most ``window − 1 + max_num_batched_tokens`` tokens;
* linear attention (Gated DeltaNet, KDA) and Mamba mixers (Mamba 1/2, LFM2's short
  convolutions): a fixed state per request (convolution window + recurrent / SSM state),
  nothing per token; a layer with no mixer (Nemotron-H's MLP and MoE layers) keeps nothing.

Capacity (``vllm/v1/core/kv_cache_utils.py``): layers of one kind form groups of equal size
(the smallest kind's layer count, or the largest when it is under 1.5× the smallest), a block
holds ``block_size`` tokens of every layer of one group, the budget divided by a block's bytes
is the block count, and all groups draw from that one pool. For hybrids with linear layers the
attention block grows until its page is at least one recurrent state (and the state page is
padded to match). vLLM's "GPU KV cache size: N tokens" was ``blocks // groups × block_size``
until late 2025 and is ``max_concurrency × max_model_len`` since; both are computed here.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from benchlib._exceptions import UsageError
from benchlib.memory._arch import LayerKind, ModelArch

__all__ = [
    "KV_CACHE_DTYPES",
    "KVCapacity",
    "KVLayout",
    "LayerCache",
    "kv_capacity",
    "kv_layout",
    "legacy_token_report",
    "with_draft",
]

KV_CACHE_DTYPES = ("auto", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4")
#: layer kinds that keep a fixed state per request instead of KV per token
_STATEFUL = ("linear", "mamba")


class LayerCache(BaseModel):
    """One layer's cache on one GPU."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: LayerKind
    #: bytes per token (0 for linear and Mamba layers)
    bytes_per_token: int
    #: bytes per request (linear and Mamba layers' recurrent + conv state; 0 otherwise)
    state_bytes: int = 0
    window: int | None = None
    #: what else makes vLLM's spec of this layer (its KV heads × head size, a drafter's
    #: non-causal attention): layers whose specs differ form separate KV groups
    shape: str = ""
    #: extra state blocks a request holds while speculating (a recurrent layer keeps one per
    #: draft token: ``MambaSpec.num_speculative_blocks``)
    spec_blocks: int = 0


class KVLayout(BaseModel):
    """All layers' caches on one GPU, plus the block size vLLM will use for them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layers: list[LayerCache]
    block_size: int
    kv_dtype: str
    dtype_bytes: float
    #: per GPU, summed over the layers whose cache grows with the context (full + MLA)
    bytes_per_token: int
    #: per GPU, summed over sliding-window layers (bounded by the window)
    sliding_bytes_per_token: int
    #: per GPU and request, summed over linear-attention layers
    state_bytes_per_request: int
    notes: list[str]

    def page_bytes(self, layer: LayerCache) -> int:
        """A block's bytes for one layer: attention pages, or one (padded) recurrent state."""
        if layer.kind in _STATEFUL:
            return self.block_size * self._attn_token_bytes()
        return self.block_size * layer.bytes_per_token

    def _attn_token_bytes(self) -> int:
        return next((x.bytes_per_token for x in self.layers if x.kind not in _STATEFUL), 0)


class KVCapacity(BaseModel):
    """How many blocks fit a budget, and what vLLM reports for them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    budget_bytes: int
    num_blocks: int
    block_size: int
    num_groups: int
    group_size: int
    padding_layers: int
    bytes_per_block: int
    blocks_per_request: int
    max_model_len: int
    max_concurrency: float
    #: ``max_concurrency × max_model_len`` (vLLM's report since late 2025; exact for any mix)
    kv_cache_tokens: int
    #: ``num_blocks // num_groups × block_size`` (vLLM's report until late 2025)
    kv_cache_tokens_legacy: int


def _dtype_bytes(kv_dtype: str, model_dtype: str) -> float:
    if kv_dtype not in KV_CACHE_DTYPES:
        raise UsageError("--kv-cache-dtype", f"{kv_dtype!r}: use one of "
                         + ", ".join(KV_CACHE_DTYPES))
    if kv_dtype.startswith("fp8"):
        return 1.0
    if kv_dtype == "nvfp4":  # packed fp4 + an fp8 scale per 16 (nvfp4_kv_cache_full_dim)
        return 0.5 + 1 / 16
    if kv_dtype == "auto" and model_dtype == "float32":
        return 2.0  # vLLM serves fp32 checkpoints in bf16
    return 2.0


def kv_layout(a: ModelArch, *, tp: int = 1, kv_cache_dtype: str = "auto", block_size: int = 16,
              hybrid_block_alignment: int | None = None, mtp: bool = False,
              num_speculative_tokens: int = 0) -> KVLayout:
    """Per-layer cache sizes on one GPU of a ``tp``-way tensor-parallel group.

    ``hybrid_block_alignment`` is the kernel block multiple vLLM rounds a hybrid model's
    attention block to (64 for MLA backends, 16 otherwise, when left ``None``). ``mtp``: the
    checkpoint's multi-token-prediction layers are served (``--speculative-config method
    mtp``), each an attention layer of its own (with its own indexer under DSA) whose cache
    vLLM takes from the same budget. ``num_speculative_tokens`` (k): a recurrent layer's
    convolution state keeps ``kernel − 1 + k`` positions and a request holds ``1 + k`` state
    blocks (``mamba_utils.py``, ``MambaSpec``; prefix caching off, vLLM's default for
    hybrids).
    """
    if tp < 1:
        raise UsageError("--tp", "must be >= 1")
    b = _dtype_bytes(kv_cache_dtype, a.torch_dtype)
    notes: list[str] = []
    kv_heads = max(1, a.num_kv_heads // tp)
    if a.num_kv_heads < tp and a.mla is None:
        notes.append(f"tp {tp} > {a.num_kv_heads} KV heads: each rank keeps a full KV head "
                     "(replicated), so KV per GPU stops shrinking")
    attn_bytes = int(2 * kv_heads * a.head_dim * b)
    mla_bytes = index_bytes = 0
    if a.mla is not None:
        m = a.mla
        latent = m.kv_lora_rank + m.qk_rope_head_dim
        if b == 1.0 and m.index_head_dim:
            # vLLM's fp8_ds_mla: fp8 latent + 4 fp32 tile scales + bf16 rope (656 B at 512/64)
            mla_bytes = m.kv_lora_rank + 4 * (m.kv_lora_rank // 128) + 2 * m.qk_rope_head_dim
        else:
            mla_bytes = int(latent * b)
        if m.index_head_dim:
            index_bytes = m.index_head_dim + 4 * max(1, m.index_head_dim // 128)
            own = sum(m.has_indexer(i, a.num_layers) for i in range(a.num_layers))
            notes.append("sparse-attention indexer keys counted with the MLA cache"
                         + (f" ({own} of {a.num_layers} layers build an indexer)"
                            if own < a.num_layers else ""))
        if tp > 1:
            notes.append(f"MLA cache is replicated on all {tp} ranks (not split by TP)")
    state = ssm = 0
    if a.linear is not None:
        la = a.linear
        conv_dim = (la.num_v_heads * la.head_v_dim + 2 * la.num_k_heads * la.head_k_dim) // tp
        conv = conv_dim * (la.conv_kernel - 1 + num_speculative_tokens) * 2
        rec_elems = (la.num_v_heads // tp) * la.head_v_dim * la.head_k_dim
        state = conv + rec_elems * (4 if la.recurrent_fp32 else 2)
    if a.mamba is not None:
        mb = a.mamba
        ssm = mb.conv_dim // tp * (mb.d_conv - 1 + num_speculative_tokens) * 2
        ssm += mb.d_inner // tp * mb.d_state * (4 if mb.state_fp32 else 2)
    layers = []
    k = num_speculative_tokens
    shape = f"{kv_heads}x{a.head_dim}"
    for i, kind in enumerate(a.layer_kinds):
        if kind == "none":
            continue
        if a.parallel_mamba and kind != "mamba":
            layers.append(LayerCache(kind="mamba", bytes_per_token=0, state_bytes=ssm,
                                     spec_blocks=k))
        if kind == "mamba":
            layers.append(LayerCache(kind=kind, bytes_per_token=0, state_bytes=ssm,
                                     spec_blocks=k))
        elif kind == "linear":
            layers.append(LayerCache(kind=kind, bytes_per_token=0, state_bytes=state,
                                     spec_blocks=k))
        elif kind == "mla":
            own = a.mla is not None and a.mla.has_indexer(i, a.num_layers)
            layers.append(LayerCache(kind=kind,
                                     bytes_per_token=mla_bytes + (index_bytes if own else 0)))
        elif kind == "sliding":
            layers.append(LayerCache(kind=kind, bytes_per_token=attn_bytes,
                                     window=a.sliding_window, shape=shape))
        else:
            layers.append(LayerCache(kind=kind, bytes_per_token=attn_bytes, shape=shape))
    for j in range(a.mtp_layers if mtp else 0):
        if a.mla is not None:
            own = a.mla.has_indexer(a.num_layers + j, a.num_layers)
            layers.append(LayerCache(kind="mla",
                                     bytes_per_token=mla_bytes + (index_bytes if own else 0)))
        else:
            layers.append(LayerCache(kind="full", bytes_per_token=attn_bytes, shape=shape))
    if mtp and a.mtp_layers:
        notes.append(f"{a.mtp_layers} MTP layer(s) keep their own cache beside the model's")
    blk = block_size
    state = max(state, ssm)
    if state and (attn_bytes if a.mla is None else mla_bytes + index_bytes) and any(
            x.kind not in _STATEFUL for x in layers):
        attn_tok = mla_bytes + index_bytes if a.mla is not None else attn_bytes
        align = hybrid_block_alignment or (64 if a.mla is not None else 16)
        align = max(align, block_size)
        blk = align * math.ceil(state / (align * attn_tok))
        notes.append(f"attention block raised to {blk} tokens so a page holds one "
                     f"{state / 2**20:.2f} MiB recurrent state")
    return KVLayout(
        layers=layers, block_size=blk, kv_dtype=kv_cache_dtype, dtype_bytes=b,
        bytes_per_token=sum(x.bytes_per_token for x in layers if x.kind in ("full", "mla")),
        sliding_bytes_per_token=sum(x.bytes_per_token for x in layers if x.kind == "sliding"),
        state_bytes_per_request=sum(x.state_bytes for x in layers), notes=notes)


def with_draft(target: KVLayout, draft: KVLayout, *, non_causal: bool = False) -> KVLayout:
    """The target's layout with a draft model's layers added: vLLM registers the drafter's
    attention layers beside the target's (``SpecDecodeBaseProposer.load_model``), in the same
    KV groups when their specs match (same kind, heads and head size, both causal), so one
    budget is divided over both. ``non_causal``: the drafter attends non-causally (DFlash),
    a spec of its own."""
    mark = "+non-causal" if non_causal else ""
    layers = [*target.layers, *(x.model_copy(update={"shape": x.shape + mark})
                                for x in draft.layers)]
    return target.model_copy(update={
        "layers": layers,
        "bytes_per_token": target.bytes_per_token + draft.bytes_per_token,
        "sliding_bytes_per_token": target.sliding_bytes_per_token
        + draft.sliding_bytes_per_token,
        "state_bytes_per_request": target.state_bytes_per_request
        + draft.state_bytes_per_request,
        "notes": [*target.notes, f"the draft model's {len(draft.layers)} layers share the KV "
                  "budget"]})


def _blocks_per_request(layer: LayerCache, block: int, max_model_len: int,
                        max_num_batched_tokens: int) -> int:
    if layer.kind in _STATEFUL:
        return 1 + layer.spec_blocks
    if layer.kind == "sliding" and layer.window:
        tokens = min(layer.window - 1 + max_num_batched_tokens, max_model_len)
        return math.ceil(tokens / block) + 1
    return math.ceil(max_model_len / block)


def kv_capacity(layout: KVLayout, budget_bytes: float, *, max_model_len: int,
                max_num_batched_tokens: int = 8192) -> KVCapacity:
    """Blocks, tokens and max concurrency for a per-GPU KV budget, grouped as vLLM does.

    Layers of one attention type whose pages differ (GLM-5.2's MLA layers with and without
    their own indexer key) form one group whose block is the sum of their pages
    (``UniformTypeKVCacheSpecs``); otherwise layers group by kind, window, page and spec
    (heads × head size, a drafter's causality): differing specs form groups of their own."""
    buckets: dict[tuple[str, int | None, int, str], list[LayerCache]] = {}
    kinds = {layer.kind for layer in layout.layers}
    one_type = len(kinds) == 1 and kinds <= {"full", "mla"}
    for layer in layout.layers:
        key = (layer.kind, layer.window, 0 if one_type else layout.page_bytes(layer),
               "" if one_type else layer.shape)
        buckets.setdefault(key, []).append(layer)
    counts = [len(v) for v in buckets.values()]
    group_size = min(counts)
    if max(counts) < group_size * 1.5:
        group_size = max(counts)
    groups: list[LayerCache] = []
    padding = 0
    for layers in buckets.values():
        n_groups = math.ceil(len(layers) / group_size)
        padding += n_groups * group_size - len(layers)
        groups.extend([layers[0]] * n_groups)
    page = max(key[2] for key in buckets)
    bytes_per_block = (sum(layout.page_bytes(x) for x in layout.layers) if one_type
                       else group_size * page)
    num_blocks = max(0, int(budget_bytes // bytes_per_block)) if bytes_per_block else 0
    per_request = sum(_blocks_per_request(g, layout.block_size, max_model_len,
                                          max_num_batched_tokens) for g in groups)
    concurrency = num_blocks / per_request if per_request else 0.0
    return KVCapacity(
        budget_bytes=int(budget_bytes), num_blocks=num_blocks, block_size=layout.block_size,
        num_groups=len(groups), group_size=group_size, padding_layers=padding,
        bytes_per_block=bytes_per_block, blocks_per_request=per_request,
        max_model_len=max_model_len, max_concurrency=concurrency,
        kv_cache_tokens=int(concurrency * max_model_len),
        kv_cache_tokens_legacy=num_blocks // max(1, len(groups)) * layout.block_size)


def legacy_token_report(vllm_version: str) -> Literal["blocks", "concurrency"]:
    """Which formula a vLLM version printed "GPU KV cache size" with: ``blocks`` (blocks //
    groups × block size) before 0.12, ``concurrency`` (× max_model_len) from 0.12 on."""
    try:
        major, minor = (int(x) for x in vllm_version.split(".")[:2])
    except ValueError:
        return "concurrency"
    return "blocks" if (major, minor) < (0, 12) else "concurrency"
