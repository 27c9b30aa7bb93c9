"""A scenario's seeding across its concurrencies: the kit's derived seeds, or one seed for
every concurrency as ``sglang.bench_serving --seed`` (and ``vllm bench serve --seed``) run once
per concurrency give.

What: :class:`SeededWorkload` is :class:`~benchlib.measure.Workload` with the recipe key
``concurrency_seeds``. ``derived`` (the default): the first concurrency draws its prompts from
``seed``, each later one from its own seed (:func:`~benchlib.measure.concurrency_seed`), so no
prompt is sent twice. ``same``: every concurrency draws from ``seed``, as seed 001's page ran
``bench_serving`` (its default seed 1 for all nine blocks): the lengths, and so the totals the
page printed, are the page's at every concurrency, not only at the first.

Why both, and labelled: a draw from one seed begins with the smaller draw from it (SGLang's
lengths and shuffle are sequential), so with ``same`` the 80 prompts at concurrency 16 begin
with the 10 sent at concurrency 1, and an engine's prefix cache answers those from cache: the
TTFT is flattered. ``derived`` measures prefill; ``same`` reproduces the page's requests. Each
measurement records which it was (``seeding``), and ``--check`` prints it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from benchlib.measure import Workload, concurrency_seed

__all__ = ["SeededWorkload"]


class SeededWorkload(Workload):
    """A workload measured at several concurrencies, with how each one is seeded."""

    concurrency_seeds: Literal["derived", "same"] = Field(
        "derived", description="derived: seed at the first concurrency, a derived seed at "
                               "each other (no prompt sent twice); same: seed at every "
                               "concurrency, as sglang.bench_serving --seed run once per "
                               "concurrency (seed 001's page): a later concurrency's prompts "
                               "begin with an earlier one's, which a prefix cache may serve")

    def seed_at(self, index: int) -> int:
        """The seed of the prompts at ``concurrencies[index]`` (0-based)."""
        return self.seed if self.concurrency_seeds == "same" else concurrency_seed(self.seed,
                                                                                   index)

    def seeding(self, index: int) -> str:
        """How the seed at ``concurrencies[index]`` was chosen, in words (the label a result
        and ``--check`` carry)."""
        if self.concurrency_seeds == "same":
            return (f"same: seed {self.seed} at every concurrency, as sglang.bench_serving "
                    "--seed (prompts repeat across concurrencies: a prefix cache may serve "
                    "them)")
        return (f"derived: seed {self.seed_at(index)}"
                + (f", derived from {self.seed}" if index else "") + " (no prompt sent twice)")
