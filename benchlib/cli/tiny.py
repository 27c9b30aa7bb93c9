"""``benchlib tiny-model``: write the tiny offline model; ``benchlib tiny-gguf``: its GGUF
files (F16 target and Q8_0 draft) through llama.cpp's converter."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["register", "run", "run_gguf"]


def register(sub: Any) -> None:
    p = sub.add_parser("tiny-model", help="write a tiny random-weight Llama model (offline)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)
    g = sub.add_parser("tiny-gguf", help="GGUF files of a model folder (default: f16 and "
                                         "q8_0) with llama.cpp's convert_hf_to_gguf.py")
    g.add_argument("--model", type=Path, required=True, help="the Hugging Face model folder")
    g.add_argument("--out", type=Path, required=True,
                   help="folder for <model>-<outtype>.gguf")
    g.add_argument("--llamacpp", type=Path, default=Path(".engines/llamacpp"),
                   help="folder with convert_hf_to_gguf.py, conversion/ and gguf-py/ "
                        "(make llamacpp)")
    g.add_argument("--python", type=Path, default=Path(sys.executable),
                   help="interpreter with torch, numpy and transformers for the converter")
    g.add_argument("--outtype", action="append", choices=["f32", "f16", "bf16", "q8_0"],
                   help="repeat for several files (default: f16 and q8_0)")
    g.set_defaults(func=run_gguf)


def run(args: argparse.Namespace) -> int:
    from benchlib.models import make_tiny_model

    path = make_tiny_model(args.out, seed=args.seed)
    print(f"tiny model: {path}")
    return 0


def run_gguf(args: argparse.Namespace) -> int:
    from benchlib.models import TINY_GGUF_OUTTYPES, make_tiny_gguf

    paths = make_tiny_gguf(args.model, args.out, llamacpp_dir=args.llamacpp,
                           python=args.python, outtypes=args.outtype or TINY_GGUF_OUTTYPES)
    for path in paths:
        print(f"gguf: {path}")
    return 0
