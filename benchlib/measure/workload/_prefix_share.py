"""How much of a prompt set a prefix cache could serve from another prompt of the same set.

What: :func:`prefix_share` encodes each prompt (a chat prompt: its messages' contents, in
order) and finds, for each, the longest prefix it shares with any other prompt of the set
(sorted token sequences: a prompt's longest common prefix with any other is with a
neighbour). A prefix cache keeps whole blocks, so only ``⌊shared / block⌋ × block`` tokens
of it can be served from cache; a prompt counts as *sharing* when that is at least one whole
block. The result gives the fraction of prompts that share, and the fraction of all prompt
tokens a cache could serve.

Why: a measured TTFT is the prefill's only when the prefill was done. A dataset that repeats
its text (a corpus walked twice for 320 prompts) gives later prompts long prefixes already
computed, and an engine with a prefix cache answers them early: the TTFT is flattered and
says nothing about prefill. ``benchlib run --check`` prints this for every text dataset, so a
recipe can be seen to hold distinct prompts before an engine starts, and every measurement of
one keeps it in its result (``benchlib.prompt_prefix_share``) and in its table row
(``prefix_sharing_fraction``).

The block is the engine's prefix-cache unit, as the run knows it (``MeasureConfig.prefix_block``,
set by ``03_measure`` from the engine: vLLM's ``--block-size`` or the block its ``/metrics``
reports, 16 on a GPU and 128 in its CPU build; SGLang's ``--page-size``, 1 by default, its radix
cache matching token by token; 1 for llama.cpp, whose slots keep their last prompt's tokens):
a shared prefix shorter than one unit cannot be served from that engine's cache. Where the
engine's unit is not known (a bare ``benchlib measure``, an ``endpoint``) it is
:data:`PREFIX_BLOCK_TOKENS`, vLLM's GPU default, and ``block_from`` says it was assumed. With a
unit of one token, prompts that merely start alike (an instruction's first words) count as
sharing: the share of prompt *tokens* a cache could serve is then the figure to read.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchlib.measure.wire._request import Prompt

__all__ = ["ASSUMED_BLOCK", "PREFIX_BLOCK_TOKENS", "TEXT_DATASETS", "PrefixShare", "prefix_share"]

#: datasets of text a prefix cache could share (random token ids share nothing by chance)
TEXT_DATASETS = ("text", "sglang-random", "file")

#: vLLM's default KV block on a GPU (``--block-size 16``): the unit assumed where the
#: engine's is not known
PREFIX_BLOCK_TOKENS = 16
#: ``block_from`` where the engine's unit was not given
ASSUMED_BLOCK = "assumed: vLLM's GPU default --block-size, the engine's own not known"


class PrefixShare(BaseModel):
    """A prompt set's shared prefixes, counted in whole blocks (kept in each result's
    ``benchlib.prompt_prefix_share``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompts: int = Field(description="prompts in the set")
    sharing: int = Field(description="prompts sharing at least one whole block with another "
                                     "prompt of the set")
    cacheable_tokens: int = Field(description="Σ per prompt: whole blocks of its longest "
                                              "shared prefix")
    total_tokens: int = Field(description="Σ prompt tokens")
    longest: int = Field(description="the longest shared prefix, in tokens")
    block: int = Field(description="the engine's prefix-cache unit, in tokens")
    block_from: str = Field(ASSUMED_BLOCK, description="where the unit comes from: the "
                            "engine's flag, its /metrics, its default, or assumed")

    @property
    def sharing_fraction(self) -> float:
        """Prompts that share a whole block, over all prompts."""
        return self.sharing / self.prompts if self.prompts else 0.0

    @property
    def cacheable_fraction(self) -> float:
        """Prompt tokens a prefix cache could serve, over all prompt tokens."""
        return self.cacheable_tokens / self.total_tokens if self.total_tokens else 0.0

    def summary(self) -> str:
        """One line for ``--check``."""
        return (f"{self.sharing} of {self.prompts} prompts ({100 * self.sharing_fraction:.0f} %) "
                f"share a prefix of ≥ {self.block} token{'s' * (self.block > 1)} "
                f"with another ({self.block_from}; longest "
                f"{self.longest}); {100 * self.cacheable_fraction:.1f} % of prompt tokens "
                "a prefix cache could serve")


def _ids(tokenizer: Any, prompt: Prompt) -> tuple[int, ...]:
    text = prompt.prompt if isinstance(prompt.prompt, str) else "\n".join(
        str(m.get("content", "")) for m in prompt.prompt)
    return tuple(int(i) for i in tokenizer.encode(text, add_special_tokens=False))


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def prefix_share(tokenizer: Any, prompts: Sequence[Prompt],
                 block: int = PREFIX_BLOCK_TOKENS, block_from: str = ASSUMED_BLOCK
                 ) -> PrefixShare:
    """The shared prefixes of ``prompts`` encoded with ``tokenizer`` (module doc)."""
    seqs = [_ids(tokenizer, p) for p in prompts]
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    best = [0] * len(seqs)
    for a, b in itertools.pairwise(order):
        n = _common(seqs[a], seqs[b])
        best[a] = max(best[a], n)
        best[b] = max(best[b], n)
    cached = [n // block * block for n in best]
    return PrefixShare(prompts=len(seqs), sharing=sum(c > 0 for c in cached),
                       cacheable_tokens=sum(cached), total_tokens=sum(map(len, seqs)),
                       longest=max(best, default=0), block=block, block_from=block_from)
