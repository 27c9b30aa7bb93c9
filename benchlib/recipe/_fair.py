"""A fair A/B, checked before it runs: what variants of one recipe must share.

Every setting that can make two engines' numbers incomparable has a name here, with the
reason it matters (one vocabulary, checked at import). Before anything starts, the variants'
settings are set side by side: a difference is refused unless the recipe declares it in
``compare.differences`` as the point of the comparison (engine, checkpoint format,
speculative method …); declared differences become the caveats 04_compare prints next to
every number (:func:`caveats`). What a recipe cannot show — that both engines count the same
prompt as the same number of tokens, honour ``max_tokens`` with ``ignore_eos`` and stream
usage — is probed on each running engine (:mod:`benchlib.pipeline._fairness`).

Scenarios, prompts (same dataset, seed and tokenizer) and sampling (benchlib sends
temperature 0, ignore_eos and the token limit in every body) are shared by construction.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from benchlib.recipe._schema import Recipe

__all__ = ["DIFFERENCES", "Difference", "caveats", "check_comparable", "variant_settings"]

Difference = Literal["engine", "checkpoint_format", "model", "speculative", "tokenizer",
                     "chat_template", "thinking", "context", "engine_flags", "usage"]

#: each setting variants must share, and why (the refusal quotes it)
DIFFERENCES: Mapping[str, str] = MappingProxyType({
    "engine": "engine kind and version: the subject of an engine A/B",
    "checkpoint_format": "the weights' file format and precision (safetensors BF16 against "
                         "GGUF Q8_0 is not the same computation)",
    "model": "model id and revision: different weights",
    "speculative": "speculative method and depth: changes tokens per step",
    "tokenizer": "the tokenizer that writes and counts the prompts: another one sends "
                 "other prompts",
    "chat_template": "the chat template: changes the prompt the engine sees",
    "thinking": "reasoning on or off: changes what and how much is generated",
    "context": "max_model_len: changes KV capacity and what is admitted",
    "engine_flags": "other flags of one engine kind (scheduling, batching, caching …)",
    "usage": "whether the stream reports usage: otherwise output tokens are re-counted",
})
assert set(DIFFERENCES) == set(get_args(Difference)), "DIFFERENCES must name every Difference"

_TEMPLATE_FLAGS = ("--chat-template", "--chat-template-file", "--chat_template")


def _flag_value(args: Sequence[str], names: Sequence[str]) -> str | None:
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in names:
            return value if eq else (args[i + 1] if i + 1 < len(args) else "")
    return None


def _other_flags(args: Sequence[str]) -> str:
    out, skip = [], False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg.partition("=")[0] in _TEMPLATE_FLAGS:
            skip = "=" not in arg and i + 1 < len(args)
            continue
        out.append(arg)
    return shlex.join(out)


def variant_settings(recipe: Recipe) -> dict[str, str]:
    """Each setting of :data:`DIFFERENCES` that a recipe states, as text to compare
    (``usage`` is probed on the running engine, not stated)."""
    e, m = recipe.engine, recipe.model
    tokenizer = m.tokenizer or (m.local_path if m.format != "gguf" else None)
    return {
        "engine": f"{e.kind} {e.version or '(version not pinned)'}",
        "checkpoint_format": m.format + (f" ({m.local_path.name})" if m.format == "gguf"
                                         and m.local_path else ""),
        "model": m.id + (f"@{m.revision}" if m.revision else ""),
        "speculative": e.speculative.label,
        "tokenizer": str(tokenizer) if tokenizer else f"{m.id} (from the hub)",
        "chat_template": _flag_value(e.args, _TEMPLATE_FLAGS) or "the model's own",
        "thinking": {None: "the model's default", True: "on", False: "off"}[recipe.thinking],
        "context": str(e.max_model_len or "the engine's default"),
        # the parallel layout was args (--tensor-parallel-size) before engine.parallel
        "engine_flags": f"{e.kind}: " + " ".join(x for x in (_other_flags(e.args), (
            f"[{e.parallel.label(recipe.hardware.nodes)}]" if e.parallel else "")) if x),
    }


def _differing(variants: Sequence[tuple[str, Recipe]]) -> dict[str, dict[str, str]]:
    """setting → {variant: value} for every setting the variants do not share
    (``engine_flags`` compared only between variants of one engine kind)."""
    table = {name: variant_settings(r) for name, r in variants}
    out: dict[str, dict[str, str]] = {}
    for setting in DIFFERENCES:
        values = {name: s[setting] for name, s in table.items() if setting in s}
        if setting == "engine_flags":
            kinds = {v.split(":", 1)[0] for v in values.values()}
            if not any(len({v for v in values.values() if v.startswith(k + ":")}) > 1
                       for k in kinds):
                continue
        elif len(set(values.values())) <= 1:
            continue
        out[setting] = values
    return out


def check_comparable(variants: Sequence[tuple[str, Recipe]],
                     declared: Sequence[str]) -> None:
    """Raise ``ValueError`` naming each setting the variants differ in that the recipe did
    not declare in ``compare.differences``."""
    if len(variants) < 2:
        return
    problems = []
    for setting, values in _differing(variants).items():
        if setting in declared:
            continue
        listed = "; ".join(f"{n}: {v}" for n, v in values.items())
        problems.append(f"variants differ in {setting} ({listed}) — {DIFFERENCES[setting]}. "
                        f"Make them agree, or add {setting} to compare.differences if it "
                        "is the point of the comparison")
    if problems:
        raise ValueError("not a fair comparison: " + "\n".join(problems))


def caveats(variants: Sequence[tuple[str, Recipe]], declared: Sequence[str]
            ) -> dict[str, list[str]]:
    """variant → the declared differences, worded for that variant (``engine: vllm
    0.32.0``), to print next to its every number."""
    differing = _differing(variants)
    return {name: [f"{s}: {differing[s][name]}" for s in declared if s in differing
                   and name in differing[s]] for name, _ in variants}
