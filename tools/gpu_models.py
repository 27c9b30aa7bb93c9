"""The models of the GPU runs, made where they run (no hub there): random weights of a real
architecture's shape, a draft model cut from them, and the tokenizer both share.

* :func:`write_tokenizer` (here, at stage time): a byte-level BPE of exactly the model's
  vocabulary size, trained on this Python's stdlib sources, with a ChatML template.
* :func:`make_model` (there): a ``LlamaForCausalLM`` of :data:`LLAMA3_8B`'s shape made on the
  GPU with transformers' own initialisation (normal(0, 0.02), norms 1), saved as safetensors
  with the staged tokenizer. The safetensors are what vLLM serves; llama.cpp serves the same
  weights converted to a BF16 GGUF (``benchlib.models.convert_to_gguf``).
* :func:`cut_draft` (there): the target's first ``layers`` decoder layers with its own
  embedding, final norm and output head — a *layer-skip* draft. With random weights an
  independent draft would almost never agree with the target; a draft made of the target's
  own first layers was expected to agree often (random layers of std 0.02 change the residual
  stream little). Measured, it does not: on an H100 (visit 9, tests/data/h100_compare)
  llama.cpp accepted 0 of 3,984 drafted tokens at concurrency 1 and under 0.03 % at 4 to 64.
  Random weights give nearly flat logits, so the argmax turns on differences the other 30
  layers change. Acceptance is a property of the weights, not of the engines, and the report
  says so; what the draft gives is both engines' draft-model paths running on one and the
  same draft, bit for bit, and the cost of a step that accepts nothing.
"""

from __future__ import annotations

import gzip
import importlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

#: Meta-Llama-3-8B's config.json, less its weights: a real architecture's shape (8.03 B
#: parameters, GQA 32/8 heads, 128,256-token vocabulary), random weights
LLAMA3_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu",
    "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
    "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
    "vocab_size": 128256, "initializer_range": 0.02, "use_cache": True,
    "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "torch_dtype": "bfloat16"}
#: a few-million-parameter model of the same kind, for trying the steps on a CPU
SMALL: dict[str, Any] = {**LLAMA3_8B, "hidden_size": 256, "intermediate_size": 512,
                         "num_hidden_layers": 4, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "head_dim": 64}
SHAPES = {"llama3-8b": LLAMA3_8B, "small": SMALL}

SPECIAL_TOKENS = ("<|pad|>", "<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>",
                  "<|im_end|>")  # ids 0..4, as the config's pad/bos/eos ids say
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|im_start|>' + message['role'] + "
    "'\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt "
    "%}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def write_tokenizer(dest: Path, vocab_size: int) -> Path:
    """A byte-level BPE of exactly ``vocab_size`` tokens (the special tokens first), trained
    on this Python's stdlib sources, with a ChatML template: ``tokenizer.json.gz`` and
    ``tokenizer_config.json``. llama.cpp's converter declares it as the ``gpt-2``
    pre-tokenizer (its split regex)."""
    import sysconfig

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = [p.read_text(encoding="utf-8", errors="replace")
             for p in sorted(stdlib.rglob("*.py")) if "site-packages" not in p.parts]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainer=trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    short = vocab_size - tok.get_vocab_size(with_added_tokens=True)
    if short > 0:
        # a small corpus stops early: ordinary vocabulary entries (no merge makes them) fill
        # the rest. Not added tokens: llama.cpp searches every prompt for each added token,
        # which cost seconds of TTFT per long prompt with 125,572 of them (measured)
        data = json.loads(tok.to_str())
        vocab = data["model"]["vocab"]
        first = max(max(vocab.values()), *(t["id"] for t in data["added_tokens"])) + 1
        vocab.update({f"<|fill_{i}|>": first + i for i in range(short)})
        tok = Tokenizer.from_str(json.dumps(data))
    if tok.get_vocab_size(with_added_tokens=True) != vocab_size:
        raise SystemExit(f"gpu_models: the tokenizer has {tok.get_vocab_size()} tokens, not "
                         f"{vocab_size}")
    dest.mkdir(parents=True, exist_ok=True)
    with gzip.open(dest / "tokenizer.json.gz", "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write(tok.to_str())
    added = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True}
             for i, t in enumerate(SPECIAL_TOKENS)}
    (dest / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": SPECIAL_TOKENS[1],
        "eos_token": SPECIAL_TOKENS[2], "pad_token": SPECIAL_TOKENS[0],
        "add_bos_token": True, "clean_up_tokenization_spaces": False,
        "model_max_length": LLAMA3_8B["max_position_embeddings"],
        "added_tokens_decoder": added, "chat_template": CHAT_TEMPLATE}, indent=2) + "\n")
    return dest


def copy_tokenizer(tokenizer: Path, dest: Path) -> None:
    """The staged tokenizer (gzipped) into a model folder."""
    with gzip.open(tokenizer / "tokenizer.json.gz", "rt", encoding="utf-8") as src:
        (dest / "tokenizer.json").write_text(src.read(), encoding="utf-8")
    shutil.copy2(tokenizer / "tokenizer_config.json", dest / "tokenizer_config.json")


def make_model(out: Path, shape: dict[str, Any], device: str, tokenizer: Path,
               seed: int = 0) -> Path:
    """A random-weight ``LlamaForCausalLM`` of ``shape``, made on ``device`` in bfloat16
    (transformers' own initialisation), saved as safetensors with ``tokenizer``; written
    whole or not at all."""
    torch: Any = importlib.import_module("torch")
    transformers: Any = importlib.import_module("transformers")

    config = transformers.LlamaConfig(**{k: v for k, v in shape.items()
                                         if k not in ("architectures", "model_type")})
    torch.manual_seed(seed)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(device):
        model = transformers.LlamaForCausalLM(config)
    model.to(torch.bfloat16)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(str(partial), max_shard_size="5GB")
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    copy_tokenizer(tokenizer, partial)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(partial, out)
    return out


def draft_tensor_names(names: list[str], layers: int) -> list[str]:
    """The target's tensors a ``layers``-layer draft keeps: every tensor outside the decoder
    layers (embedding, final norm, output head) and those of layers ``0 … layers-1``."""
    keep = []
    for name in names:
        parts = name.split(".")
        if "layers" in parts:
            index = parts[parts.index("layers") + 1]
            if not index.isdigit() or int(index) >= layers:
                continue
        keep.append(name)
    return keep


def cut_draft(target: Path, out: Path, layers: int) -> Path:
    """The draft model of :mod:`this module's docstring <gpu_models>`: ``target``'s first
    ``layers`` layers, its embedding, norm and head, bit for bit; config and tokenizer
    copied with ``num_hidden_layers`` set. Written whole or not at all."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    config = json.loads((target / "config.json").read_text())
    if not 0 < layers < int(config["num_hidden_layers"]):
        raise SystemExit(f"gpu_models: a draft needs 1 … {config['num_hidden_layers'] - 1} "
                         f"layers, not {layers}")
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    tensors: dict[str, Any] = {}
    for shard in sorted(target.glob("*.safetensors")):
        with safe_open(str(shard), framework="pt") as fh:
            for name in draft_tensor_names(list(fh.keys()), layers):
                tensors[name] = fh.get_tensor(name)
    save_file(tensors, str(partial / "model.safetensors"), metadata={"format": "pt"})
    config["num_hidden_layers"] = layers
    (partial / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (target / name).is_file():
            shutil.copy2(target / name, partial / name)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(partial, out)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("model", help="a random-weight model folder")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--shape", choices=sorted(SHAPES), default="llama3-8b")
    m.add_argument("--device", default="cuda")
    m.add_argument("--tokenizer", type=Path, required=True, help="the staged tokenizer")
    d = sub.add_parser("draft", help="a layer-skip draft cut from a model folder")
    d.add_argument("--target", type=Path, required=True)
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--layers", type=int, default=2)
    args = p.parse_args(argv)
    if args.command == "model":
        make_model(args.out, SHAPES[args.shape], args.device, args.tokenizer)
    else:
        cut_draft(args.target, args.out, args.layers)
    print(json.dumps({"out": str(args.out)}), file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
