"""Proof that vLLM and llama.cpp get the same weights: the BF16 GGUF against the BF16
safetensors folder, and both against the quantized GGUF they came from.

What :func:`check_weights` holds, raising ValueError with every difference found:

* every tensor of the BF16 GGUF (llama.cpp's converter's output) equals the original
  quantized file's tensor of the same name, dequantized and rounded to BF16, bit for bit
  (BF16 matrices; F32 norms whose values are those BF16 values);
* every tensor of ``model.safetensors`` (what vLLM loads) equals the BF16 GGUF's, bit for bit,
  found through llama.cpp's own name map (``gguf.get_tensor_name_map``) and its own q/k row
  permutation, so the folder is checked by llama.cpp's reading of it, not by the code that
  wrote it (:mod:`._gguf_to_hf`);
* the tokenizer (tokens, types, merges, pre-tokenizer, special ids, add_bos, chat template)
  and the llama.* hyperparameters of the BF16 GGUF are the original's: the draft model
  (the original file) and the target share one vocabulary.

It also measures what BF16 costs: how many dequantized values BF16 cannot hold exactly and
the largest change rounding made (recorded in the folders' provenance).

Runs as a script in an interpreter with numpy and llama.cpp's ``gguf-py`` (``python
_weights_check.py --gguf-py DIR ORIGINAL BF16_GGUF SAFETENSORS``: JSON on stdout), so it
imports only the standard library at the top.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path
from typing import Any

__all__ = ["check_weights", "read_safetensors_bf16"]

#: metadata the BF16 GGUF must carry exactly as the original does
_SAME_KEYS = (
    "general.architecture", "llama.block_count", "llama.context_length",
    "llama.embedding_length", "llama.feed_forward_length", "llama.attention.head_count",
    "llama.attention.head_count_kv", "llama.rope.freq_base",
    "llama.attention.layer_norm_rms_epsilon", "llama.rope.dimension_count",
    "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
    "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
    "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
    "tokenizer.chat_template",
)


def read_safetensors_bf16(path: Path) -> dict[str, Any]:
    """Each BF16 tensor of a safetensors file as its uint16 bits (numpy has no bfloat16),
    read from the format's own header: an 8-byte length, JSON, then the data."""
    import numpy as np

    with path.open("rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "BF16":
            raise ValueError(f"{path.name}: {name} is {info['dtype']}, not BF16")
        start, end = info["data_offsets"]
        out[name] = data[start:end].view("<u2").reshape(info["shape"])
    return out


def _permute(rows: Any, heads: int) -> Any:
    """llama.cpp's ``LlamaModel.permute`` (conversion/llama.py), as its converter applies it
    to q_proj (attention heads) and k_proj (key-value heads)."""
    shape = rows.shape
    return rows.reshape(heads, 2, shape[0] // heads // 2, *shape[1:]).swapaxes(1, 2) \
        .reshape(shape)


def _bf16_bits(values: Any) -> Any:
    """float32 → nearest-even BF16 bits (the rounding torch and gguf-py apply)."""
    import numpy as np

    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
            >> np.uint32(16)).astype(np.uint16)


def _gguf_bits(tensor: Any) -> Any:
    """A BF16 or F32 GGUF tensor as BF16 bits (F32 only when its low 16 bits are zero)."""
    import numpy as np
    from gguf import GGMLQuantizationType  # type: ignore[import-not-found,unused-ignore]

    shape = [int(d) for d in reversed(tensor.shape.tolist())]
    if tensor.tensor_type == GGMLQuantizationType.BF16:
        return np.asarray(tensor.data).view("<u2").reshape(shape)
    if tensor.tensor_type == GGMLQuantizationType.F32:
        u = np.asarray(tensor.data, dtype=np.float32).view(np.uint32).reshape(shape)
        if (u & np.uint32(0xFFFF)).any():
            raise ValueError(f"{tensor.name}: F32 values that are not BF16 values")
        return (u >> np.uint32(16)).astype(np.uint16)
    raise ValueError(f"{tensor.name} is {tensor.tensor_type.name}, not BF16 or F32")


def check_weights(original: Path, bf16_gguf: Path, safetensors: Path) -> dict[str, Any]:
    """Hold the three files to one another (see the module's docstring); returns what was
    compared and what BF16 rounding changed. Raises ValueError naming every mismatch."""
    import numpy as np
    from gguf import MODEL_ARCH, GGUFReader, get_tensor_name_map  # type: ignore[import-not-found,unused-ignore]
    from gguf.quants import dequantize  # type: ignore[import-not-found,unused-ignore]

    src, ours = GGUFReader(original), GGUFReader(bf16_gguf)
    problems = []
    for key in _SAME_KEYS:
        a, b = (r.fields.get(key) for r in (src, ours))
        if (a.contents() if a else None) != (b.contents() if b else None):
            problems.append(f"{key} differs from the original's")
    by_name = {t.name: t for t in ours.tensors}
    differ = sorted(set(by_name) ^ {t.name for t in src.tensors})
    if differ:
        problems.append(f"{len(differ)} tensor names in one file only: {differ[:4]}")
    elements = rounded = 0
    worst = 0.0
    for t in src.tensors:
        if t.name not in by_name:
            continue
        exact = dequantize(t.data, t.tensor_type).astype(np.float32)
        bits = _bf16_bits(exact)
        got = _gguf_bits(by_name[t.name])
        if got.shape != bits.reshape(got.shape).shape or not np.array_equal(
                got, bits.reshape(got.shape)):
            problems.append(f"{t.name}: BF16 GGUF ≠ BF16 of the original's values")
        back = (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
        elements += exact.size
        rounded += int(np.count_nonzero(back != exact))
        worst = max(worst, float(np.max(np.abs(back - exact))))
    heads = int(src.fields["llama.attention.head_count"].contents())
    kv_heads = int(src.fields["llama.attention.head_count_kv"].contents())
    names = get_tensor_name_map(MODEL_ARCH.LLAMA,
                                int(src.fields["llama.block_count"].contents()))
    folder = read_safetensors_bf16(safetensors)
    seen = set()
    for hf, bits in folder.items():
        gguf_name = names.get_name(hf, try_suffixes=(".weight", ".bias"))  # suffix kept
        if gguf_name not in by_name:
            problems.append(f"safetensors {hf}: no such tensor in the BF16 GGUF")
            continue
        seen.add(gguf_name)
        if hf.endswith("q_proj.weight"):
            bits = _permute(bits, heads)
        elif hf.endswith("k_proj.weight"):
            bits = _permute(bits, kv_heads)
        if not np.array_equal(bits, _gguf_bits(by_name[gguf_name])):
            problems.append(f"safetensors {hf} ≠ GGUF {gguf_name}")
    if seen != set(by_name):
        missing = sorted(set(by_name) - seen)
        problems.append(f"{len(missing)} GGUF tensors not in the safetensors: {missing[:4]}")
    if problems:
        more = f"; … {len(problems) - 8} more" if len(problems) > 8 else ""
        raise ValueError("; ".join(problems[:8]) + more)
    return {"tensors": len(by_name), "elements": elements,
            "bf16_rounded_fraction": round(rounded / max(elements, 1), 6),
            "bf16_max_abs_change": worst,
            "tokenizer_pre": ours.fields["tokenizer.ggml.pre"].contents()}


if __name__ == "__main__":
    # python _weights_check.py --gguf-py DIR ORIGINAL BF16_GGUF SAFETENSORS
    _, flag, gguf_py, *files = sys.argv
    assert flag == "--gguf-py" and len(files) == 3, sys.argv
    sys.path.insert(0, gguf_py)  # llama.cpp's gguf-py, not an installed gguf package
    try:
        print(json.dumps(check_weights(*(Path(f) for f in files))))
    except ValueError as exc:
        print(f"weights check: {exc}", file=sys.stderr)
        sys.exit(1)
