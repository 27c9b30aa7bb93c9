"""A tiny random-weight Llama model that vLLM can serve, made offline in seconds.

What: :func:`make_tiny_model` writes a Hugging Face model folder::

    config.json              LlamaForCausalLM config (plain JSON, no torch needed)
    generation_config.json   bos/pad ids; eos ids end_of_text and im_end (no sampling defaults)
    model.safetensors        random float16 weights from numpy (every value is exactly
                             representable in bfloat16 too, so ``--dtype bfloat16`` is lossless)
    tokenizer.json           byte-level BPE trained with ``tokenizers`` on the Python stdlib
    tokenizer_config.json    special tokens and a ChatML ``chat_template``

Why: serving benchmarks need a real engine speaking the real wire protocol (streaming, usage
chunks, chat templates) without network access, GPU, or gigabytes of weights. The text it
generates is noise; the token counts, timings and protocol are real. Use ``ignore_eos`` and
``max_tokens`` to control output length.

Determinism: the same ``seed`` and arguments give byte-identical files on the same Python
version (the tokenizer corpus is a fixed, sorted subset of the running interpreter's stdlib
sources, so another Python release may give another tokenizer). The seed only affects weights.

The folder appears atomically: files are written into a hidden sibling temp folder which is then
renamed to ``out_dir``, so an interrupted run never leaves a folder that looks complete.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sysconfig
import tempfile
from typing import Any

import numpy as np
import numpy.typing as npt
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

__all__ = ["TINY_MODEL_FILES", "make_tiny_model"]

TINY_MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)
PAD, BOS, EOS, IM_START, IM_END = (
    "<|pad|>",
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|im_start|>",
    "<|im_end|>",
)
SPECIAL_TOKENS = [PAD, BOS, EOS, IM_START, IM_END]  # ids 0..4
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
_CORPUS_BYTES = 1_500_000  # ~1 s of BPE training


def _corpus() -> list[str]:
    """A fixed, sorted subset of the stdlib's top-level ``.py`` files (about 1.5 MB)."""
    texts: list[str] = []
    total = 0
    for path in sorted(pathlib.Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        if total >= _CORPUS_BYTES:
            break
        text = path.read_text(encoding="utf-8", errors="replace")
        texts.append(text)
        total += len(text)
    if not texts:
        raise RuntimeError("no stdlib .py sources found to train the tokenizer on")
    return texts


def _train_tokenizer(vocab_size: int) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    # A small corpus may yield fewer merges than asked for: fill up with reserved tokens so the
    # tokenizer's size is exactly the model's vocab_size.
    n = tok.get_vocab_size(with_added_tokens=True)
    tok.add_special_tokens([f"<|reserved_{i}|>" for i in range(vocab_size - n)])
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, 1)]
    )
    return tok


def _weights(
    seed: int,
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    inter: int,
    vocab: int,
) -> dict[str, npt.NDArray[np.float16]]:
    rng = np.random.default_rng(seed)
    head_dim = hidden // heads

    def normal(*shape: int) -> npt.NDArray[np.float16]:
        # Round float32 to bfloat16 (nearest-even), then store as float16: the result is exactly
        # representable in both formats (8 significant bits, fp16's exponent range).
        u = rng.normal(0.0, 0.02, size=shape).astype(np.float32).view(np.uint32)
        u = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
        return u.view(np.float32).astype(np.float16)

    def ones(n: int) -> npt.NDArray[np.float16]:
        return np.ones(n, dtype=np.float16)

    w = {"model.embed_tokens.weight": normal(vocab, hidden)}
    for i in range(layers):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = ones(hidden)
        w[p + "self_attn.q_proj.weight"] = normal(heads * head_dim, hidden)
        w[p + "self_attn.k_proj.weight"] = normal(kv_heads * head_dim, hidden)
        w[p + "self_attn.v_proj.weight"] = normal(kv_heads * head_dim, hidden)
        w[p + "self_attn.o_proj.weight"] = normal(hidden, heads * head_dim)
        w[p + "post_attention_layernorm.weight"] = ones(hidden)
        w[p + "mlp.gate_proj.weight"] = normal(inter, hidden)
        w[p + "mlp.up_proj.weight"] = normal(inter, hidden)
        w[p + "mlp.down_proj.weight"] = normal(hidden, inter)
    w["model.norm.weight"] = ones(hidden)
    w["lm_head.weight"] = normal(vocab, hidden)
    return w


def _write_json(path: pathlib.Path, obj: dict[str, Any]) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def make_tiny_model(
    out_dir: pathlib.Path,
    *,
    seed: int = 0,
    hidden_size: int = 256,
    num_layers: int = 4,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 512,
    vocab_size: int = 4096,
    max_position_embeddings: int = 4096,
) -> pathlib.Path:
    """Write a tiny random Llama model folder at ``out_dir`` and return ``out_dir``.

    An existing ``out_dir`` is replaced only if it is empty or holds nothing but files this
    function writes; otherwise :class:`FileExistsError` is raised.
    """
    if hidden_size % num_heads or num_heads % num_kv_heads:
        raise ValueError("hidden_size must divide by num_heads, num_heads by num_kv_heads")
    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must be at least {256 + len(SPECIAL_TOKENS)}")
    out_dir = pathlib.Path(out_dir)
    if out_dir.exists() and not {p.name for p in out_dir.iterdir()} <= set(TINY_MODEL_FILES):
        raise FileExistsError(f"{out_dir} exists and does not look like a tiny model folder")
    out_dir.parent.mkdir(parents=True, exist_ok=True)

    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        tok = _train_tokenizer(vocab_size)
        tok.save(str(tmp / "tokenizer.json"))
        ids = {t: tok.token_to_id(t) for t in SPECIAL_TOKENS}
        assert list(ids.values()) == list(range(len(SPECIAL_TOKENS)))
        assert tok.get_vocab_size(with_added_tokens=True) == vocab_size
        added = {
            str(tok.token_to_id(t.content)): {
                "content": t.content, "lstrip": False, "normalized": False,
                "rstrip": False, "single_word": False, "special": True,
            }
            for t in tok.get_added_tokens_decoder().values()
        }  # fmt: skip
        _write_json(
            tmp / "tokenizer_config.json",
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": BOS,
                "eos_token": EOS,
                "pad_token": PAD,
                "add_bos_token": True,
                "clean_up_tokenization_spaces": False,
                "model_max_length": max_position_embeddings,
                "added_tokens_decoder": added,
                "chat_template": CHAT_TEMPLATE,
            },
        )
        special_ids = {"bos_token_id": ids[BOS], "eos_token_id": ids[EOS], "pad_token_id": ids[PAD]}
        _write_json(
            tmp / "config.json",
            {
                "architectures": ["LlamaForCausalLM"],
                "model_type": "llama",
                "hidden_size": hidden_size,
                "intermediate_size": intermediate_size,
                "num_hidden_layers": num_layers,
                "num_attention_heads": num_heads,
                "num_key_value_heads": num_kv_heads,
                "head_dim": hidden_size // num_heads,
                "hidden_act": "silu",
                "max_position_embeddings": max_position_embeddings,
                "rms_norm_eps": 1e-5,
                "rope_theta": 10000.0,
                "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
                "attention_bias": False,
                "mlp_bias": False,
                "tie_word_embeddings": False,
                "vocab_size": vocab_size,
                "initializer_range": 0.02,
                "use_cache": True,
                "torch_dtype": "float16",
                **special_ids,
            },
        )
        _write_json(
            tmp / "generation_config.json",
            {**special_ids, "eos_token_id": [ids[EOS], ids[IM_END]]},
        )
        weights = _weights(
            seed, hidden_size, num_layers, num_heads, num_kv_heads, intermediate_size, vocab_size
        )
        save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        for f in tmp.iterdir():  # mkdtemp makes 0700; safetensors may write 0600
            f.chmod(0o644)
        tmp.chmod(0o755)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
