"""A GGUF of random weights in a real model's shape and quantization mix, written straight
in its quantized types.

What: :func:`write_random_gguf` writes ``llama.cpp``'s ``qwen35`` architecture (Qwen3.5 /
Qwen3.6 / Qwen3.8: Gated-DeltaNet layers with a full-attention layer every fourth, plus one
MTP block) in the shape of :data:`SHAPES` (``qwen38-27b``, the model open-jet's megakernel
is built for, or ``tiny``, the same architecture in a few MB for tests) with the per-tensor
types of unsloth's ``Q4_K_M`` (:func:`tensor_plan`), the tokenizer of a Hugging Face folder
(:mod:`._gguf_vocab`), and random weights (:mod:`._random_blocks`).

Why: a serving benchmark of the megakernel needs a file its loader accepts (it checks the
architecture, the 27B dimensions and every tensor's type, see /work/notes/openjet.md) and
that reads as much memory per token as the real one; the real weights cannot be fetched
on the GPU machine and their BF16 form (54 GB) would not fit its disk. Nothing in between
is made: the header is gguf-py's ``GGUFWriter`` (tensor infos from sizes alone), then the
data region is filled in parallel (``jobs`` processes), chunk by chunk, each with its own
seeded generator, by ``os.pwrite`` at the offsets the header gives: about 16.4 GB for the
27B. The file appears whole or not at all (written as ``.NAME.partial``, then renamed).

The text such a model generates is noise and its MTP drafts are almost never accepted, so
it measures an engine's cost per cycle, not the acceptance a real model gets.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchlib.models._gguf_convert import import_gguf
from benchlib.models._gguf_vocab import GgufVocab, read_vocab
from benchlib.models._random_blocks import BLOCK, random_blocks, random_f32

__all__ = ["QUANTS", "SHAPES", "Qwen35Shape", "TensorSpec", "tensor_plan", "write_random_gguf"]

ARCH = "qwen35"
QUANTS = ("Q4_K_M",)
#: bytes of one chunk a worker makes and writes (a few times this in memory per worker)
CHUNK_BYTES = 32 << 20
ALIGNMENT = 32  # gguf-py's default: tensor data offsets are multiples of it


@dataclass(frozen=True)
class Qwen35Shape:
    """The hyper-parameters llama.cpp's ``qwen35`` loader reads (and the megakernel fixes)."""

    name: str
    n_layer: int  # trunk layers; block_count = n_layer + n_mtp
    n_mtp: int
    hidden: int
    ffn: int
    n_head: int
    n_head_kv: int
    head_dim: int
    ssm_k_heads: int  # ssm.group_count
    ssm_v_heads: int  # ssm.time_step_rank
    ssm_head_dim: int  # ssm.state_size (key and value head size)
    conv_kernel: int
    vocab: int
    context_length: int
    rope_sections: tuple[int, int, int, int]
    full_attention_interval: int = 4
    rope_base: float = 10_000_000.0
    rms_eps: float = 1e-6

    @property
    def rope_dim(self) -> int:  # partial_rotary_factor 0.25
        return self.head_dim // 4

    def is_attention(self, il: int) -> bool:
        """Full attention every ``full_attention_interval``-th layer, and the MTP block."""
        return il >= self.n_layer or (il + 1) % self.full_attention_interval == 0


SHAPES = {
    # megakernel/qwen38_mk.cu: D 5120, FF 17408, VOCAB 248320, NL 64 (+1 MTP), NH 24, NKV 4,
    # HD 256, NKH 16, NVH 48, HK 128, ROPE_BASE 1e7, EPS 1e-6 (Qwen3.5-27B's config)
    "qwen38-27b": Qwen35Shape("qwen38-27b", n_layer=64, n_mtp=1, hidden=5120, ffn=17408,
                              n_head=24, n_head_kv=4, head_dim=256, ssm_k_heads=16,
                              ssm_v_heads=48, ssm_head_dim=128, conv_kernel=4, vocab=248320,
                              context_length=262144, rope_sections=(11, 11, 10, 0)),
    # every K dimension a multiple of 256 (K-quant blocks), 3 DeltaNet + 1 attention layer
    "tiny": Qwen35Shape("tiny", n_layer=4, n_mtp=1, hidden=256, ffn=512, n_head=2,
                        n_head_kv=1, head_dim=128, ssm_k_heads=2, ssm_v_heads=4,
                        ssm_head_dim=64, conv_kernel=4, vocab=4096, context_length=4096,
                        rope_sections=(6, 5, 5, 0)),
}


@dataclass(frozen=True)
class TensorSpec:
    """One tensor: GGUF name, ``ne`` (ggml order: row length first), type, F32 init."""

    name: str
    ne: tuple[int, ...]
    qtype: str
    init: str = "normal"

    @property
    def nbytes(self) -> int:
        per, size = BLOCK[self.qtype]
        return math.prod(self.ne) // per * size


def _more_bits(il: int, n: int) -> bool:
    """llama.cpp's ``use_more_bits`` (src/llama-quant.cpp): the layers Q4_K_M gives Q6_K."""
    return il < n // 8 or il >= 7 * n // 8 or (il - n // 8) % 3 == 2


def tensor_plan(shape: Qwen35Shape, quant: str = "Q4_K_M") -> list[TensorSpec]:
    """Every tensor of the file in llama-quantize's output order (non-block tensors, then
    block by block, names sorted), with unsloth's Q4_K_M types: Q4_K, but Q6_K for
    ``output`` and for ``attn_qkv`` / ``attn_v`` / ``ffn_down`` where ``use_more_bits``
    (layer index over all blocks, MTP included), Q5_K ``ssm_out``, F32 ``ssm_alpha`` /
    ``ssm_beta``, Q8_0 ``nextn.eh_proj``; 1-D tensors and ``ssm_conv1d`` F32."""
    if quant not in QUANTS:
        raise ValueError(f"quant {quant!r} is not one of {', '.join(QUANTS)}")
    d, n_all = shape.hidden, shape.n_layer + shape.n_mtp
    key_dim = shape.ssm_k_heads * shape.ssm_head_dim
    value_dim = shape.ssm_v_heads * shape.ssm_head_dim
    q_out, kv_out = 2 * shape.n_head * shape.head_dim, shape.n_head_kv * shape.head_dim
    specs = [TensorSpec("output.weight", (d, shape.vocab), "Q6_K"),
             TensorSpec("output_norm.weight", (d,), "F32", "ones"),
             TensorSpec("token_embd.weight", (d, shape.vocab), "Q4_K")]
    for il in range(n_all):
        wide = "Q6_K" if _more_bits(il, n_all) else "Q4_K"
        layer = [("attn_norm.weight", (d,), "F32", "ones"),
                 ("post_attention_norm.weight", (d,), "F32", "ones"),
                 ("ffn_gate.weight", (d, shape.ffn), "Q4_K", "normal"),
                 ("ffn_up.weight", (d, shape.ffn), "Q4_K", "normal"),
                 ("ffn_down.weight", (shape.ffn, d), wide, "normal")]
        if shape.is_attention(il):
            layer += [("attn_q.weight", (d, q_out), "Q4_K", "normal"),
                      ("attn_k.weight", (d, kv_out), "Q4_K", "normal"),
                      ("attn_v.weight", (d, kv_out), wide, "normal"),
                      ("attn_output.weight", (q_out // 2, d), "Q4_K", "normal"),
                      ("attn_q_norm.weight", (shape.head_dim,), "F32", "ones"),
                      ("attn_k_norm.weight", (shape.head_dim,), "F32", "ones")]
        else:
            layer += [("attn_qkv.weight", (d, 2 * key_dim + value_dim), wide, "normal"),
                      ("attn_gate.weight", (d, value_dim), "Q4_K", "normal"),
                      ("ssm_conv1d.weight", (shape.conv_kernel, 2 * key_dim + value_dim),
                       "F32", "normal"),
                      ("ssm_dt.bias", (shape.ssm_v_heads,), "F32", "ones"),
                      ("ssm_a", (shape.ssm_v_heads,), "F32", "decay"),
                      ("ssm_alpha.weight", (d, shape.ssm_v_heads), "F32", "normal"),
                      ("ssm_beta.weight", (d, shape.ssm_v_heads), "F32", "normal"),
                      ("ssm_norm.weight", (shape.ssm_head_dim,), "F32", "ones"),
                      ("ssm_out.weight", (value_dim, d), "Q5_K", "normal")]
        if il >= shape.n_layer:  # the MTP block's own tensors
            layer += [("nextn.eh_proj.weight", (2 * d, d), "Q8_0", "normal"),
                      ("nextn.enorm.weight", (d,), "F32", "ones"),
                      ("nextn.hnorm.weight", (d,), "F32", "ones"),
                      ("nextn.shared_head_norm.weight", (d,), "F32", "ones")]
        specs += [TensorSpec(f"blk.{il}.{n}", ne, q, init) for n, ne, q, init in sorted(layer)]
    return specs


def _metadata(writer: Any, gguf: Any, shape: Qwen35Shape, vocab: GgufVocab, pre: str,
              name: str) -> None:
    """The keys llama.cpp's ``qwen35`` loader and the megakernel read, as the converter
    writes them for Qwen3.5 (conversion/qwen.py), and the tokenizer's."""
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.add_context_length(shape.context_length)
    writer.add_embedding_length(shape.hidden)
    writer.add_block_count(shape.n_layer + shape.n_mtp)
    writer.add_nextn_predict_layers(shape.n_mtp)
    writer.add_feed_forward_length(shape.ffn)
    writer.add_head_count(shape.n_head)
    writer.add_head_count_kv(shape.n_head_kv)
    writer.add_key_length(shape.head_dim)
    writer.add_value_length(shape.head_dim)
    writer.add_layer_norm_rms_eps(shape.rms_eps)
    writer.add_rope_freq_base(shape.rope_base)
    writer.add_rope_dimension_count(shape.rope_dim)
    writer.add_rope_dimension_sections(list(shape.rope_sections))
    writer.add_ssm_conv_kernel(shape.conv_kernel)
    writer.add_ssm_inner_size(shape.ssm_v_heads * shape.ssm_head_dim)
    writer.add_ssm_state_size(shape.ssm_head_dim)
    writer.add_ssm_time_step_rank(shape.ssm_v_heads)
    writer.add_ssm_group_count(shape.ssm_k_heads)
    writer.add_full_attention_interval(shape.full_attention_interval)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    if vocab.merges:
        writer.add_token_merges(vocab.merges)
    for add, value in ((writer.add_bos_token_id, vocab.bos_id),
                       (writer.add_eos_token_id, vocab.eos_id),
                       (writer.add_pad_token_id, vocab.pad_id)):
        if value is not None:
            add(value)
    writer.add_add_bos_token(vocab.add_bos)
    writer.add_chat_template(vocab.chat_template)


@dataclass(frozen=True)
class _Chunk:
    """One worker task: ``count`` blocks (or F32 values) of a tensor at ``offset``."""

    path: str
    offset: int
    qtype: str
    init: str
    count: int
    seed: tuple[int, int, int]
    sigma: float


def _chunks(path: Path, plan: list[TensorSpec], data_start: int, seed: int,
            sigma: float) -> Iterator[_Chunk]:
    offset = data_start
    for index, spec in enumerate(plan):
        per, size = BLOCK[spec.qtype]
        blocks, step = math.prod(spec.ne) // per, max(1, CHUNK_BYTES // size)
        for k, first in enumerate(range(0, blocks, step)):
            yield _Chunk(str(path), offset + first * size, spec.qtype, spec.init,
                         min(step, blocks - first), (seed, index, k), sigma)
        offset += -(-spec.nbytes // ALIGNMENT) * ALIGNMENT


def _fill(chunk: _Chunk) -> int:
    """Make one chunk (its own generator, from its seed) and write it in place."""
    rng = np.random.Generator(np.random.SFC64(np.random.SeedSequence(list(chunk.seed))))
    data = (random_f32(chunk.init, chunk.count, rng, chunk.sigma) if chunk.qtype == "F32"
            else random_blocks(chunk.qtype, chunk.count, rng, chunk.sigma))
    view = np.ascontiguousarray(data).reshape(-1).data.cast("B")
    fd = os.open(chunk.path, os.O_WRONLY)
    try:
        done = 0
        while done < len(view):
            done += os.pwrite(fd, view[done:], chunk.offset + done)
    finally:
        os.close(fd)
    return len(view)


def write_random_gguf(out: Path, shape: Qwen35Shape, tokenizer: Path, *, llamacpp_dir: Path,
                      quant: str = "Q4_K_M", seed: int = 0, sigma: float = 0.02,
                      pre_tokenizer: str = "gpt-2", jobs: int | None = None) -> Path:
    """``out``: ``shape`` in ``quant`` with random weights (std ``sigma``) and the
    tokenizer of the folder ``tokenizer`` (its chat template included; its vocabulary
    padded to ``shape.vocab``). ``pre_tokenizer`` is llama.cpp's name for its split regex
    (``gpt-2`` for the kit's tokenizers, ``qwen35`` for Qwen's own). Same arguments, same
    bytes. Raises ``ValueError`` for a tokenizer that does not fit."""
    gguf = import_gguf(llamacpp_dir)
    vocab = read_vocab(tokenizer, shape.vocab)
    if vocab.chat_template is None:
        raise ValueError(f"{tokenizer}: no chat_template in tokenizer_config.json (the "
                         "megakernel's server renders every request with the GGUF's)")
    plan = tensor_plan(shape, quant)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    t0 = time.perf_counter()
    writer = gguf.GGUFWriter(partial, arch=ARCH)
    _metadata(writer, gguf, shape, vocab, pre_tokenizer, f"{shape.name}-random")
    for spec in plan:
        if spec.qtype == "F32":
            writer.add_tensor_info(spec.name, spec.ne[::-1], np.dtype(np.float32), spec.nbytes)
        else:
            rows = math.prod(spec.ne[1:])
            writer.add_tensor_info(spec.name, (rows, spec.nbytes // rows), np.dtype(np.uint8),
                                   spec.nbytes, raw_dtype=gguf.GGMLQuantizationType[spec.qtype])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    fout = writer.fout[0]
    writer.write_padding(fout, fout.tell())
    data_start = fout.tell()
    writer.close()
    total = data_start + sum(-(-s.nbytes // ALIGNMENT) * ALIGNMENT for s in plan)
    os.truncate(partial, total)
    chunks = list(_chunks(partial, plan, data_start, seed, sigma))
    workers = max(1, min(jobs or os.cpu_count() or 1, len(chunks)))
    written = 0
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for n in pool.map(_fill, chunks):
            written += n
    os.replace(partial, out)
    seconds = time.perf_counter() - t0
    print(f"random-gguf: {out} ({total / 1e9:.2f} GB, {len(plan)} tensors) in {seconds:.0f} s "
          f"with {workers} workers ({written / 1e9 / max(seconds, 1e-9):.2f} GB/s)",
          file=sys.stderr)
    return out

