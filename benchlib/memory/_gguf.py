"""GGUF files: exact weight bytes per quantization type, and the architecture from the header.

A GGUF's mix (Q4_K_M keeps some tensors in Q6_K, norms in F32, …) is read tensor by tensor
with the ``gguf`` package, so the bytes are the file's, not a bits-per-weight guess. The
header's ``{arch}.*`` keys give the same architecture fields a ``config.json`` would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from benchlib._exceptions import UsageError
from benchlib.memory._arch import ModelArch
from benchlib.memory._arch_read import arch_from_dict

__all__ = ["GGUFInfo", "load_gguf"]


class GGUFInfo(BaseModel):
    """What a GGUF file holds: its architecture, quantization mix and tensor bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    arch: ModelArch
    file_type: str
    tensor_bytes: int
    bytes_by_type: dict[str, int]
    #: bytes of tensors the file keeps unquantized (F32 / F16 / BF16)
    high_precision_bytes: int


def _value(reader: Any, key: str) -> Any:
    field = reader.get_field(key)
    if field is None:
        return None
    val = field.contents()
    if isinstance(val, list) and val and all(v == val[0] for v in val):
        return val[0]  # per-layer arrays with one value (head_count_kv on most models)
    return val


def load_gguf(path: Path | str) -> GGUFInfo:
    """Read a ``.gguf`` file's header (no tensor data is loaded)."""
    try:
        from gguf import GGUFReader, LlamaFileType
    except ImportError:  # pragma: no cover - depends on the environment
        raise UsageError("--model-config", "reading GGUF needs the gguf package "
                         "(pip install gguf)") from None
    p = Path(path)
    if not p.is_file():
        raise UsageError("--model-config", f"{p}: no such GGUF file")
    try:
        reader = GGUFReader(p)
    except (ValueError, OSError) as exc:
        raise UsageError("--model-config", f"{p}: not a GGUF file ({exc})") from None
    arch = str(_value(reader, "general.architecture") or "llama")

    def k(name: str) -> Any:
        return _value(reader, f"{arch}.{name}")

    tokens = reader.get_field("tokenizer.ggml.tokens")
    vocab = k("vocab_size") or (len(tokens.data) if tokens is not None else None)
    embd = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
    if vocab is None and embd is not None:
        vocab = int(max(embd.shape))
    heads = k("attention.head_count")
    hidden = k("embedding_length")
    cfg: dict[str, Any] = {
        "model_type": arch, "num_hidden_layers": k("block_count"), "hidden_size": hidden,
        "num_attention_heads": heads, "num_key_value_heads": k("attention.head_count_kv") or heads,
        "head_dim": k("attention.key_length") or (hidden // heads if hidden and heads else None),
        "intermediate_size": k("feed_forward_length"), "vocab_size": vocab,
        "max_position_embeddings": k("context_length"),
        "tie_word_embeddings": not any(t.name == "output.weight" for t in reader.tensors),
    }
    if k("expert_count"):
        cfg.update(num_local_experts=k("expert_count"), num_experts_per_tok=k("expert_used_count"),
                   moe_intermediate_size=k("expert_feed_forward_length")
                   or k("feed_forward_length"),
                   n_shared_experts=k("expert_shared_count") or 0,
                   first_k_dense_replace=k("leading_dense_block_count") or 0)
    if k("attention.kv_lora_rank"):
        cfg.update(kv_lora_rank=k("attention.kv_lora_rank"),
                   qk_rope_head_dim=k("rope.dimension_count"),
                   q_lora_rank=k("attention.q_lora_rank"))
    if k("attention.sliding_window"):
        cfg.update(sliding_window=k("attention.sliding_window"), use_sliding_window=True)
    by_type: dict[str, int] = {}
    for t in reader.tensors:
        name = t.tensor_type.name
        by_type[name] = by_type.get(name, 0) + int(t.n_bytes)
    ftype = _value(reader, "general.file_type")
    try:
        file_type = LlamaFileType(int(ftype)).name.removeprefix("MOSTLY_") if ftype is not None \
            else "unknown"
    except ValueError:
        file_type = f"file_type {ftype}"
    name = str(_value(reader, "general.name") or p.stem)
    model = arch_from_dict(cfg, name=name, fill=False)
    total = sum(by_type.values())
    model = model.model_copy(update={"checkpoint_bytes": total,
                                     "quantization": {"quant_method": "gguf",
                                                      "file_type": file_type}})
    high = sum(v for t, v in by_type.items() if t in ("F32", "F16", "BF16"))
    return GGUFInfo(path=str(p), arch=model, file_type=file_type, tensor_bytes=total,
                    bytes_by_type=by_type, high_precision_bytes=high)
