"""A Llama GGUF file (quantized) as a Hugging Face BF16 model folder, from the file alone.

What: :func:`gguf_to_hf` reads a GGUF file with llama.cpp's ``gguf-py`` and writes::

    config.json              LlamaForCausalLM config from the file's llama.* metadata
                             (no quantization_config: a plain checkpoint)
    generation_config.json   bos / eos / pad ids as the file gives them
    model.safetensors        every tensor dequantized (gguf.quants.dequantize) and rounded
                             to BF16 (round to nearest, ties to even, as torch rounds)
    tokenizer.json           the file's byte-level BPE (tokens, merges, control tokens)
    tokenizer_config.json    special tokens, add_bos_token and the file's chat_template

Why by hand and not ``transformers``' GGUF loading: that needs the ``gguf`` and
``accelerate`` packages in the converting interpreter and refuses ``save_pretrained`` of what
it loaded; this needs numpy, ``tokenizers`` and the ``gguf-py`` of a llama.cpp tree, which
every interpreter that runs llama.cpp's converter already has (``make model`` here; a GPU
machine's python3 without the ``gguf`` package and without network).

Two things a GGUF file changes that are undone here: llama.cpp's converter permutes the
rows of ``q_proj`` / ``k_proj`` for its RoPE layout (undone, so that converting this folder
back gives the same tensors), and names tensors its own way (mapped back, every name
accounted for). The tokenizer is rebuilt with the pre-tokenizer the file names
(``tokenizer.ggml.pre``); llama.cpp's converter recognises a rebuilt tokenizer only when it
splits text exactly as the original did, which :mod:`._weights_check` then verifies.

Runs as a script in the converting interpreter (``python _gguf_to_hf.py --gguf-py DIR
SRC OUT``), so it imports only the standard library at the top, like
:mod:`._gguf_convert`.
"""

from __future__ import annotations

import json
import re
import struct
import sys
from pathlib import Path
from typing import Any

__all__ = ["GGUF_TO_HF", "gguf_to_hf", "hf_name", "to_bf16_bits", "unpermute"]

#: llama.cpp tensor names (``blk.N.`` stripped) → Hugging Face Llama names (``model.layers.N.``)
GGUF_TO_HF = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
_TOP = {"token_embd.weight": "model.embed_tokens.weight",
        "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight"}
#: the pre-tokenizers this module can rebuild: llama.cpp's name → (split digits one by one)
_PRE = {"smollm": True, "gpt-2": False}
_BLOCK = re.compile(r"^blk\.(\d+)\.(.+)$")


def hf_name(name: str) -> str:
    """``blk.3.attn_q.weight`` → ``model.layers.3.self_attn.q_proj.weight``; an unknown
    name raises ValueError (a tensor is never dropped silently)."""
    if name in _TOP:
        return _TOP[name]
    m = _BLOCK.match(name)
    if m is None or m[2] not in GGUF_TO_HF:
        raise ValueError(f"no Hugging Face name for the GGUF tensor {name!r}")
    return f"model.layers.{m[1]}.{GGUF_TO_HF[m[2]]}"


def unpermute(rows: Any, heads: int) -> Any:
    """Undo llama.cpp's ``LlamaModel.permute`` (q_proj with the attention heads, k_proj
    with the key-value heads): its rows, per head, back from interleaved halves."""
    shape = rows.shape
    return rows.reshape(heads, shape[0] // heads // 2, 2, *shape[1:]).swapaxes(1, 2) \
        .reshape(shape)


def to_bf16_bits(values: Any) -> Any:
    """float32 → the bits of the nearest bfloat16 (ties to even), as uint16."""
    import numpy as np

    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    if not np.isfinite(values).all():
        raise ValueError("a tensor holds a NaN or an infinity")
    return ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
            >> np.uint32(16)).astype(np.uint16)


def _field(reader: Any, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def _config(reader: Any, tied: bool) -> dict[str, Any]:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"general.architecture is {arch!r}: only llama files are supported")

    def hp(key: str) -> Any:
        value = _field(reader, f"llama.{key}")
        if value is None:
            raise ValueError(f"the file has no llama.{key}")
        return value

    hidden, heads = int(hp("embedding_length")), int(hp("attention.head_count"))
    rope = float(hp("rope.freq_base"))
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": hidden, "intermediate_size": int(hp("feed_forward_length")),
        "num_hidden_layers": int(hp("block_count")), "num_attention_heads": heads,
        "num_key_value_heads": int(hp("attention.head_count_kv")),
        "head_dim": int(_field(reader, "llama.rope.dimension_count", hidden // heads)),
        "hidden_act": "silu", "max_position_embeddings": int(hp("context_length")),
        "rms_norm_eps": float(hp("attention.layer_norm_rms_epsilon")),
        "rope_theta": rope, "rope_parameters": {"rope_type": "default", "rope_theta": rope},
        "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": tied,
        "vocab_size": len(_field(reader, "tokenizer.ggml.tokens")),
        "use_cache": True, "torch_dtype": "bfloat16", **_special_ids(reader),
    }


def _special_ids(reader: Any) -> dict[str, int]:
    out = {}
    for ours, key in (("bos_token_id", "bos"), ("eos_token_id", "eos"),
                      ("pad_token_id", "padding")):
        value = _field(reader, f"tokenizer.ggml.{key}_token_id")
        if value is not None:
            out[ours] = int(value)
    return out


def _tokenizer(reader: Any) -> tuple[Any, list[str]]:
    """The file's vocabulary as a ``tokenizers`` byte-level BPE, and its control tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    model, pre = _field(reader, "tokenizer.ggml.model"), _field(reader, "tokenizer.ggml.pre")
    if model != "gpt2" or pre not in _PRE:
        raise ValueError(f"tokenizer {model!r} with pre-tokenizer {pre!r}: only gpt2 with "
                         f"{' or '.join(_PRE)} can be rebuilt")
    tokens: list[str] = list(_field(reader, "tokenizer.ggml.tokens"))
    types = list(_field(reader, "tokenizer.ggml.token_type"))
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges,
                               fuse_unk=False, byte_fallback=False))
    split = [pre_tokenizers.Digits(individual_digits=True)] if _PRE[pre] else []
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [*split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    control = [t for t, kind in zip(tokens, types, strict=True) if kind == 3]  # CONTROL
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
    return tok, control


def _tokenizer_config(reader: Any, control: list[str]) -> dict[str, Any]:
    tokens = _field(reader, "tokenizer.ggml.tokens")
    named = {name: tokens[i] for name, i in (
        ("bos_token", _field(reader, "tokenizer.ggml.bos_token_id")),
        ("eos_token", _field(reader, "tokenizer.ggml.eos_token_id")),
        ("unk_token", _field(reader, "tokenizer.ggml.unknown_token_id")),
        ("pad_token", _field(reader, "tokenizer.ggml.padding_token_id"))) if i is not None}
    added = {str(tokens.index(t)): {"content": t, "lstrip": False, "normalized": False,
                                    "rstrip": False, "single_word": False, "special": True}
             for t in control}
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast", **named,
        "add_bos_token": bool(_field(reader, "tokenizer.ggml.add_bos_token", False)),
        "add_eos_token": bool(_field(reader, "tokenizer.ggml.add_eos_token", False)),
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(_field(reader, "llama.context_length")),
        "added_tokens_decoder": added,
    }
    template = _field(reader, "tokenizer.chat_template")
    if template is not None:
        config["chat_template"] = template
    return config


def _write_safetensors(path: Path, reader: Any, heads: int, kv_heads: int) -> None:
    """Every tensor of ``reader`` dequantized to BF16, one at a time (the header first, from
    the shapes), in the file's order."""
    import numpy as np
    from gguf.quants import dequantize  # type: ignore[import-not-found,unused-ignore]

    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for t in reader.tensors:
        shape = [int(d) for d in reversed(t.shape.tolist())]  # GGUF lists the fastest first
        size = 2 * int(np.prod(shape))
        header[hf_name(t.name)] = {"dtype": "BF16", "shape": shape,
                                   "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        for t in reader.tensors:
            values = dequantize(t.data, t.tensor_type).reshape(header[hf_name(t.name)]["shape"])
            if t.name.endswith("attn_q.weight"):
                values = unpermute(values, heads)
            elif t.name.endswith("attn_k.weight"):
                values = unpermute(values, kv_heads)
            fh.write(to_bf16_bits(values).astype("<u2").tobytes())


def gguf_to_hf(src: Path, out_dir: Path) -> dict[str, Any]:
    """Write the model folder of the GGUF file ``src`` into the existing, empty ``out_dir``;
    returns the versions of the tools that made it (for the folder's provenance)."""
    import importlib.metadata

    import numpy as np
    import tokenizers
    from gguf import GGUFReader  # type: ignore[import-not-found,unused-ignore]

    reader = GGUFReader(src)
    names = [t.name for t in reader.tensors]
    for name in names:
        hf_name(name)  # every tensor has a place before anything is written
    config = _config(reader, tied="output.weight" not in names)
    tok, control = _tokenizer(reader)
    tok.save(str(out_dir / "tokenizer.json"))

    def write(name: str, obj: dict[str, Any]) -> None:
        (out_dir / name).write_text(json.dumps(obj, indent=2, sort_keys=True,
                                               ensure_ascii=False) + "\n", encoding="utf-8")

    write("tokenizer_config.json", _tokenizer_config(reader, control))
    write("config.json", config)
    write("generation_config.json", _special_ids(reader))
    _write_safetensors(out_dir / "model.safetensors", reader,
                       config["num_attention_heads"], config["num_key_value_heads"])
    versions: dict[str, str | None] = {"python": sys.version.split()[0],
                                       "numpy": np.__version__,
                                       "tokenizers": tokenizers.__version__}
    for name in ("torch", "transformers"):  # the converter's, in this same interpreter
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


if __name__ == "__main__":
    # python _gguf_to_hf.py --gguf-py DIR SRC OUT: the tools' versions as JSON on stdout
    _, flag, gguf_py, source, target = sys.argv
    assert flag == "--gguf-py", sys.argv
    sys.path.insert(0, gguf_py)  # llama.cpp's gguf-py, not an installed gguf package
    print(json.dumps(gguf_to_hf(Path(source), Path(target))))
