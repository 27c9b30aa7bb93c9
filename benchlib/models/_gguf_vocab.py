"""A Hugging Face BPE tokenizer as GGUF tokenizer metadata, padded to a model's vocabulary.

What: :func:`read_vocab` reads a tokenizer folder (``tokenizer.json`` or
``tokenizer.json.gz``, and ``tokenizer_config.json``) into :class:`GgufVocab`: the token
strings by id, their GGUF token types, the merges, the special token ids, whether to add
BOS, and the chat template; ids past the tokenizer's own size, up to the model's vocabulary
size, become plain ``<|pad{id}|>`` tokens (NORMAL).

Why: an engine that tokenizes with the GGUF (llama.cpp, open-jet's megakernel through
libllama) must split a prompt as the benchmark's tokenizer does, or "3,163 input tokens"
means another number on the server. So the GGUF carries the very tokenizer the recipe's
``model.tokenizer`` names, stored as llama.cpp's converter stores a byte-level BPE
(``tokenizer.ggml.model`` ``gpt2``: tokens in the byte-to-unicode alphabet, merges as
``"a b"``; added tokens CONTROL when special, else USER_DEFINED). The padding keeps the
output head's rows and the vocabulary the same size, as a real checkpoint has them. Pad
tokens are NORMAL: a random model that samples one still streams its text (an UNUSED token
decodes to nothing, and the server then sends no chunk for it), no merge ever produces one
(a prompt tokenizes as the benchmark's tokenizer says), and llama.cpp leaves them out of
the special tokens it scans every prompt for (every CONTROL and USER_DEFINED token is
searched for in the text, one after the other: with 125,572 USER_DEFINED fillers, a
3,163-token prompt took 1.6 s to tokenize in open-jet's server, a 19K one 29 s). So a
tokenizer should bring few added tokens of its own and leave the rest to this padding.

Reads JSON with the standard library only: no ``tokenizers`` or ``transformers`` needed.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CONTROL", "NORMAL", "USER_DEFINED", "GgufVocab", "read_vocab"]

#: gguf-py's ``TokenType`` values (gguf/constants.py)
NORMAL, CONTROL, USER_DEFINED = 1, 3, 4


@dataclass(frozen=True)
class GgufVocab:
    """Everything ``tokenizer.ggml.*`` (and the chat template) says about a tokenizer."""

    tokens: list[str]
    types: list[int]
    merges: list[str]
    bos_id: int | None
    eos_id: int | None
    pad_id: int | None
    add_bos: bool
    chat_template: str | None
    own_size: int  # the tokenizer's own tokens; the rest are padding


def _tokenizer_json(folder: Path) -> dict[str, Any]:
    plain, packed = folder / "tokenizer.json", folder / "tokenizer.json.gz"
    if plain.is_file():
        data: dict[str, Any] = json.loads(plain.read_text(encoding="utf-8"))
        return data
    if packed.is_file():
        with gzip.open(packed, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
        return data
    raise FileNotFoundError(f"{folder} has no tokenizer.json (or tokenizer.json.gz)")


def _content(value: Any) -> str | None:
    """A special token in tokenizer_config.json: a string or ``{"content": …}``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _template(config: dict[str, Any]) -> str | None:
    value = config.get("chat_template")
    if isinstance(value, list):  # [{"name": "default", "template": …}, …]
        named = {t.get("name"): t.get("template") for t in value if isinstance(t, dict)}
        value = named.get("default")
    return value if isinstance(value, str) else None


def read_vocab(folder: Path, size: int) -> GgufVocab:
    """The tokenizer in ``folder`` as GGUF metadata of exactly ``size`` tokens.

    Raises ``ValueError`` for a tokenizer that is not BPE, has gaps in its ids, or has more
    tokens than ``size``."""
    tok = _tokenizer_json(folder)
    model = tok.get("model") or {}
    if model.get("type") != "BPE":
        raise ValueError(f"{folder}: a {model.get('type')!r} tokenizer, not byte-level BPE")
    by_id: dict[int, tuple[str, int]] = {i: (t, NORMAL) for t, i in model["vocab"].items()}
    for added in tok.get("added_tokens") or []:
        kind = CONTROL if added.get("special") else USER_DEFINED
        by_id[int(added["id"])] = (added["content"], kind)
    own = len(by_id)
    if sorted(by_id) != list(range(own)):
        raise ValueError(f"{folder}: token ids are not 0..{own - 1} without gaps")
    if own > size:
        raise ValueError(f"{folder}: {own} tokens, more than the model's {size}")
    tokens = [by_id[i][0] for i in range(own)] + [f"<|pad{i}|>" for i in range(own, size)]
    types = [by_id[i][1] for i in range(own)] + [NORMAL] * (size - own)
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges") or []]
    cfg_path = folder / "tokenizer_config.json"
    config: dict[str, Any] = json.loads(cfg_path.read_text()) if cfg_path.is_file() else {}
    ids = {t: i for i, t in enumerate(tokens)}

    def special(key: str) -> int | None:
        name = _content(config.get(key))
        return ids.get(name) if name is not None else None

    return GgufVocab(tokens=tokens, types=types, merges=merges, bos_id=special("bos_token"),
                     eos_id=special("eos_token"), pad_id=special("pad_token"),
                     add_bos=bool(config.get("add_bos_token", False)),
                     chat_template=_template(config), own_size=own)
