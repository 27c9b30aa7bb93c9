"""Prompt sets: ``random`` (exact token counts, vLLM's or SGLang's length ranges) and ``file``
(the ``text`` dataset, real prose cut to the same drawn lengths: :mod:`._text_prompts`).

``random`` prompts are built from random token ids (special tokens excluded), decoded, and
re-encoded until the text encodes to exactly the drawn length, so "1024 input tokens" is a
fact about what the server receives, not an estimate. Lengths are drawn as the reference
tools draw them: vLLM ``[⌊L(1−r)⌋, ⌈L(1+r)⌉]``; SGLang ``[max(1, ⌊L·r⌋), L]``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchlib._exceptions import UsageError
from benchlib.measure.wire._request import Prompt

__all__ = ["DatasetKind", "draw_lengths", "file_prompts", "length_range", "random_prompts"]

RangeMode = Literal["vllm", "sglang"]
#: where prompts come from: random token ids, a JSONL file, the kit's real-text corpus (as
#: an instruction and a passage, or cut as SGLang's random dataset cuts ShareGPT), a trace
#: replayed at its own times, or multi-turn conversations
DatasetKind = Literal["random", "file", "text", "sglang-random", "trace", "conversations"]


def length_range(length: int, ratio: float, mode: RangeMode) -> tuple[int, int]:
    """Inclusive bounds of the drawn lengths for a requested ``length``."""
    if mode == "sglang":
        return max(1, math.floor(length * ratio)), length
    return max(1, math.floor(length * (1 - ratio))), max(1, math.ceil(length * (1 + ratio)))


def _exact_text(tokenizer: Any, ids: list[int], target: int, pool: np.ndarray,
                rng: np.random.Generator) -> str:
    """Decode ``ids`` and nudge the text until it re-encodes to exactly ``target`` tokens.

    Decoding and re-encoding can merge or split tokens; trimming or topping up converges in a
    few rounds. When it cycles, the tail is redrawn.
    """
    seen: set[int] = set()
    for _ in range(64):
        text: str = tokenizer.decode(ids, skip_special_tokens=True)
        ids = list(tokenizer.encode(text, add_special_tokens=False))
        if len(ids) == target:
            return text
        if len(ids) in seen:  # cycling: redraw the tail
            cut = max(0, min(len(ids), target) - 8)
            ids = ids[:cut] + [int(x) for x in rng.choice(pool, target - cut)]
            seen.clear()
            continue
        seen.add(len(ids))
        if len(ids) > target:
            ids = ids[:target]
        else:
            ids += [int(x) for x in rng.choice(pool, target - len(ids))]
    raise UsageError("--input-len", f"could not build a prompt of exactly {target} tokens "
                     "with this tokenizer")


def draw_lengths(tokenizer: Any, rng: np.random.Generator, *, num_prompts: int,
                 input_len: int, output_len: int, range_ratio: float,
                 range_mode: RangeMode) -> tuple[list[int], list[int]]:
    """Each prompt's input and output length, drawn as the reference tools draw them (all
    inputs, then all outputs, from ``rng``)."""
    if range_mode == "vllm":
        # as vLLM: the tokens the server adds (BOS) come off the requested length, so the
        # server sees --input-len; prompt_len is what the prompt itself holds
        input_len = max(1, input_len - int(getattr(tokenizer, "num_special_tokens_to_add",
                                                   lambda: 0)()))
    lo, hi = length_range(input_len, range_ratio, range_mode)
    olo, ohi = length_range(output_len, range_ratio, range_mode)
    input_lens = rng.integers(lo, hi + 1, size=num_prompts)
    output_lens = rng.integers(olo, ohi + 1, size=num_prompts)
    return [int(n) for n in input_lens], [int(n) for n in output_lens]


def random_prompts(tokenizer: Any, *, num_prompts: int, input_len: int, output_len: int,
                   range_ratio: float = 0.0, range_mode: RangeMode = "vllm",
                   seed: int = 0) -> list[Prompt]:
    """``num_prompts`` prompts of random tokens with exact, verified input lengths."""
    rng = np.random.default_rng(seed)
    input_lens, output_lens = draw_lengths(
        tokenizer, rng, num_prompts=num_prompts, input_len=input_len, output_len=output_len,
        range_ratio=range_ratio, range_mode=range_mode)
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    special |= {i for i, tok in (getattr(tokenizer, "added_tokens_decoder", {}) or {}).items()
                if getattr(tok, "special", False)}
    pool = np.array([i for i in range(len(tokenizer)) if i not in special], dtype=np.int64)
    prompts = []
    for n_in, n_out in zip(input_lens, output_lens, strict=True):
        ids = [int(x) for x in rng.choice(pool, n_in)]
        text = _exact_text(tokenizer, ids, n_in, pool, rng)
        prompts.append(Prompt(text, n_in, n_out))
    return prompts


def file_prompts(path: Path, tokenizer: Any | None, *, num_prompts: int | None,
                 output_len: int | None) -> list[Prompt]:
    """Prompts from JSONL: ``{"prompt": str}`` or ``{"messages": [...]}`` per line, with an
    optional ``"output_len"``. Input length is counted with the tokenizer when one is given
    (chat: with its chat template), else left 0 and taken from the server's usage."""
    if not path.is_file():
        raise UsageError("--dataset-path", f"no such file: {path}")
    prompts: list[Prompt] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise UsageError("--dataset-path", f"{path}:{lineno}: not JSON ({exc})") from None
            if not isinstance(row, dict) or not ({"prompt", "messages"} & row.keys()):
                raise UsageError("--dataset-path",
                                 f"{path}:{lineno}: expected an object with 'prompt' or "
                                 "'messages'")
            text: str | list[dict[str, Any]] = row.get("prompt") or row["messages"]
            n_out = row.get("output_len", output_len)
            prompts.append(Prompt(text, _count(tokenizer, text), n_out))
            if num_prompts is not None and len(prompts) >= num_prompts:
                break
    if not prompts:
        raise UsageError("--dataset-path", f"{path} holds no prompts")
    return prompts


def _count(tokenizer: Any | None, text: str | list[dict[str, Any]]) -> int:
    if tokenizer is None:
        return 0
    if isinstance(text, str):
        return len(tokenizer.encode(text, add_special_tokens=False))
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(text, add_generation_prompt=True, tokenize=True)
        if isinstance(ids, Mapping):  # transformers ≥ 4.5x: a BatchEncoding (a Mapping)
            ids = ids["input_ids"]
        return len(ids)
    return sum(len(tokenizer.encode(str(m.get("content", "")), add_special_tokens=False))
               for m in text)
