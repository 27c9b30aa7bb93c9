"""``benchlib random-gguf``: a GGUF of random weights in a real model's shape and quant mix
(``--shape qwen38-27b --quant Q4_K_M``: what open-jet's megakernel loads), written straight
in its quantized types by parallel workers, with the tokenizer of a Hugging Face folder."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

__all__ = ["QUANT_CHOICES", "SHAPE_CHOICES", "register", "run"]

#: benchlib.models.SHAPES and QUANTS, named here so that building the parser imports no
#: numpy (a test holds them equal)
SHAPE_CHOICES = ("qwen38-27b", "tiny")
QUANT_CHOICES = ("Q4_K_M",)


def register(sub: Any) -> None:
    p = sub.add_parser("random-gguf", help="a random-weight GGUF of a model's shape and "
                                           "quant mix (no float copy; minutes for a 27B)")
    p.add_argument("--shape", choices=SHAPE_CHOICES, required=True,
                   help="qwen38-27b (Qwen3.8-27B, llama.cpp arch qwen35) or tiny (the same "
                        "architecture in a few MB)")
    p.add_argument("--quant", choices=QUANT_CHOICES, default="Q4_K_M",
                   help="per-tensor types: unsloth's Q4_K_M mix")
    p.add_argument("--tokenizer", type=Path, required=True,
                   help="folder with tokenizer.json (or .json.gz) and tokenizer_config.json "
                        "(its chat_template); padded to the shape's vocabulary")
    p.add_argument("--pre-tokenizer", default="gpt-2",
                   help="llama.cpp's name for the tokenizer's split regex (qwen35 for "
                        "Qwen's own tokenizer)")
    p.add_argument("--out", type=Path, required=True, help="the .gguf file to write")
    p.add_argument("--llamacpp", type=Path, default=Path(".engines/llamacpp"),
                   help="folder with llama.cpp's gguf-py (make llamacpp)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sigma", type=float, default=0.02,
                   help="standard deviation of the dequantized weights")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="worker processes generating and writing the data")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlib import UsageError
    from benchlib.models import SHAPES, write_random_gguf

    if not args.tokenizer.is_dir():
        raise UsageError("--tokenizer", f"{args.tokenizer} is not a folder")
    try:
        path = write_random_gguf(args.out, SHAPES[args.shape], args.tokenizer,
                                 llamacpp_dir=args.llamacpp, quant=args.quant,
                                 seed=args.seed, sigma=args.sigma,
                                 pre_tokenizer=args.pre_tokenizer, jobs=args.jobs)
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError("--tokenizer", str(exc)) from exc
    print(f"gguf: {path}")
    return 0
