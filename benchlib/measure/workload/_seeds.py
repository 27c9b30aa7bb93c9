"""The one rule for every seed of a run, so that no two sets of requests share a prompt.

An engine with a prefix cache (vLLM's on by default, SGLang's radix tree, llama.cpp's slots
that keep their last prompt) answers a prompt it has already seen faster: a measured request
whose prompt was sent before is a cache hit, and its TTFT flatters the engine. On the H200
llama.cpp run the first measured request, whose prompt the warmup had just sent, took 13 ms
against 65 ms for the rest. So each set of requests a run sends draws its prompts from its
own seed, all derived from the scenario's ``seed`` by this table:

=====================================================  ====================================
requests                                               seed of their prompts
=====================================================  ====================================
a measurement's prompts: the scenario's first          ``seed`` (so ``vllm bench serve
concurrency, and ``benchlib measure``'s                --seed seed`` sends the same)
the prompts at the scenario's k-th concurrency, k ≥ 1  ``derive(seed, "concurrency", k)``
a long-context ramp's j-th length, j ≥ 1               ``derive(seed, "ramp", j)``
repeat r ≥ 1 of a measurement                          ``derive(measured, "repeat", r)``
the warmups before a measurement                       ``derive(measured, "warmups")``
the SDK view after a measurement                       ``derive(measured, "sdk")``
02_launch's fair-A/B probe of a scenario               ``derive(seed, "probe")``
the bootstrap resampling of a measurement's intervals  ``derive(measured, "bootstrap")``
=====================================================  ====================================

``measured`` is the seed of that measurement's own prompts. Every result records the seed its
prompts were drawn with under vLLM's key ``seed``, so ``vllm bench serve --seed`` with that
number sends the same prompts, and its warmups' seed beside it. The random dataset draws the
lengths before the tokens, so without this rule the 8 prompts at concurrency 1 are the first 8
of the 16 at concurrency 4 (equal lengths draw nothing), and a ramp's 8,192-token prompt
begins with its 4,096-token one.

``warmups_like_vllm`` keeps ``vllm bench serve``'s behaviour — every warmup is the first
measured prompt — for like-for-like comparisons with it; the result says which was used.
"""

from __future__ import annotations

import hashlib

__all__ = ["SEED_LIMIT", "bootstrap_seed", "concurrency_seed", "derive", "probe_seed", "ramp_seed",
           "repeat_seed", "sdk_seed", "warmup_seed"]

#: seeds are below 2**31: what numpy and vllm bench serve's --seed take everywhere
SEED_LIMIT = 2**31


def derive(seed: int, purpose: str, index: int = 0) -> int:
    """A seed for ``purpose`` (and its ``index``) within a run seeded ``seed``: the first
    four bytes of sha256 of ``"{seed}/{purpose}/{index}"``, big-endian, below 2**31.
    Deterministic (a re-run sends the same), and distinct purposes do not collide."""
    digest = hashlib.sha256(f"{seed}/{purpose}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % SEED_LIMIT


def concurrency_seed(seed: int, k: int) -> int:
    """The seed of a scenario's prompts at its ``k``-th concurrency (0-based): ``seed`` for
    the first, a derived one for the others."""
    return seed if k == 0 else derive(seed, "concurrency", k)


def ramp_seed(seed: int, j: int) -> int:
    """The seed of a long-context ramp's ``j``-th length (0-based)."""
    return seed if j == 0 else derive(seed, "ramp", j)


def repeat_seed(measured: int, r: int) -> int:
    """The seed of repeat ``r`` (0-based) of a measurement seeded ``measured``."""
    return measured if r == 0 else derive(measured, "repeat", r)


def warmup_seed(measured: int) -> int:
    """The seed of the warmups before a measurement seeded ``measured``."""
    return derive(measured, "warmups")


def probe_seed(seed: int) -> int:
    """The seed of 02_launch's fair-A/B probe of a scenario seeded ``seed``."""
    return derive(seed, "probe")


def sdk_seed(measured: int) -> int:
    """The seed of the SDK view after a measurement seeded ``measured``."""
    return derive(measured, "sdk")


def bootstrap_seed(measured: int) -> int:
    """The seed of the bootstrap resampling behind the intervals of a measurement seeded
    ``measured`` (its first repeat's seed): the same records give the same intervals."""
    return derive(measured, "bootstrap")
