"""What speculation costs per engine step, and the acceptance at which it starts to pay.

At one request at a time a decode is a series of engine steps. Without speculation a step
makes one token, so its time is the request's TPOT (``t_plain``). With speculation a step
drafts ``k`` tokens and verifies them in one forward pass of the target, and makes
``τ = 1 + a`` tokens, ``a`` being how many drafts were accepted. The step's time ``t_spec``
is a property of the engine, ``k`` and the GPU; ``a`` is a property of the weights. So a run
on dummy or random weights, whose acceptance says nothing, still measures the cost ratio
``r = t_spec / t_plain``, and from it, for any acceptance::

    speedup(τ) = τ · t_plain / t_spec = τ / r
    break-even:  τ* = r tokens per step, an acceptance rate of (r − 1) / k

(a step never makes more than ``k + 1`` tokens: where ``r > k + 1`` speculation cannot pay).

Steps are counted on the wire: the gaps between a request's events with choices. An engine
that streams one event per step (vLLM at concurrency 1) shows one gap per step; one that
streams one event per token (llama.cpp, open-jet 0.5.1) writes a step's tokens back to back,
so a gap shorter than :data:`BURST_FRACTION` of the request's 90th-percentile gap (two events
in one read among them) lies inside a step. Either way the long gaps are the steps. Where the
server counts accepted drafts (vLLM's ``/metrics`` ``spec_decode_num_accepted_tokens``,
llama.cpp's ``draft_n_accepted``), its own step count stands beside: every step after the
first token makes one token plus the ones it accepted, so ``steps = Σ (output tokens − 1) −
accepted``. It counts low by the drafts a request's last step accepted past ``max_tokens``
(counted, never sent: up to k per request that hit its limit), which is why the wire's count
is the one the ratio uses (measured on the H200, vLLM n-gram k=4, 8 × 128 tokens: 231 steps
on the wire, 216 from the server's count, 800 accepted of which the client saw 785).

The decode's time is the wire's: each request's first text to its last event
(``e2el_ms − ttft_ms``), summed over the requests, so long requests weigh by their steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from benchlib.measure.results._records import RequestRecord

__all__ = ["BURST_FRACTION", "DecodeSteps", "Projection", "SpecCost",
           "decode_steps", "request_decode_rate", "spec_cost"]

#: a gap shorter than this fraction of the request's 90th-percentile gap lies inside a step
BURST_FRACTION = 0.25


class DecodeSteps(BaseModel):
    """One variant's decode at one scenario, as steps."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int = Field(description="successful requests with more than one output token")
    decode_ms: float = Field(description="Σ (e2el_ms − ttft_ms): first text to last event")
    tokens: int = Field(description="Σ (output tokens − 1): the tokens the decode made")
    steps: int = Field(description="engine steps those tokens took, on the wire")
    server_steps: float | None = Field(
        description="Σ (output tokens − 1) − the server's accepted drafts: its own count (low "
                    "by drafts accepted past max_tokens); null: it counts none")

    @property
    def step_ms(self) -> float:
        """The mean time of one engine step."""
        return self.decode_ms / self.steps

    @property
    def tokens_per_step(self) -> float:
        """τ: tokens one step made (1 without speculation)."""
        return self.tokens / self.steps


def _decoding(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    return [r for r in records if r.success and r.e2el_ms is not None and r.ttft_ms is not None
            and (r.output_tokens or 0) > 1]


def _steps(r: RequestRecord) -> int:
    """One request's engine steps after its first token: its long gaps."""
    gaps = np.asarray(r.itl_ms, dtype=float)
    if gaps.size == 0:  # every event in one read: one step as far as the wire can tell
        return 1
    cut = BURST_FRACTION * float(np.percentile(gaps, 90))
    return max(1, int(np.count_nonzero(gaps >= cut)))


def decode_steps(records: Sequence[RequestRecord], *,
                 accepted: float | None = None) -> DecodeSteps | None:
    """The decode of ``records`` as steps on the wire, the server's count beside when it
    counted ``accepted`` draft tokens over the same requests. None without a request that
    decoded."""
    done = _decoding(records)
    if not done:
        return None
    decode = sum(float(r.e2el_ms or 0) - float(r.ttft_ms or 0) for r in done)
    tokens = sum(int(r.output_tokens or 0) - 1 for r in done)
    return DecodeSteps(requests=len(done), decode_ms=decode, tokens=tokens,
                       steps=max(1, sum(_steps(r) for r in done)),
                       server_steps=None if accepted is None else tokens - accepted)


def request_decode_rate(records: Sequence[RequestRecord]) -> float | None:
    """The mean of each request's own decode rate, tokens/s (1000 / its TPOT): how seed 003
    reports speed ("each request's rate, then the mean"), beside the kit's 1000 / median
    TPOT. None without a request that decoded."""
    rates = [1000.0 / r.tpot_ms for r in _decoding(records) if r.tpot_ms]
    return float(np.mean(rates)) if rates else None


class Projection(BaseModel):
    """The speedup this GPU would give at some tokens per step: a projection, not a
    measurement."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(description="where τ comes from")
    tokens_per_step: float = Field(description="τ = 1 + accepted drafts per step")
    speedup: float = Field(description="τ / r")


class SpecCost(BaseModel):
    """One speculating variant against its own engine without speculation, at one scenario."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    variant: str
    baseline: str
    scenario: str
    k: int = Field(description="tokens drafted per step")
    step_ms: float = Field(description="one verify step with k drafted tokens, mean (wire)")
    steps: int = Field(description="the verify steps it is the mean of (wire)")
    server_steps: float | None = Field(description="the server's own count of them")
    plain_step_ms: float = Field(description="one plain decode step: the baseline's TPOT")
    cost_ratio: float = Field(description="r = step_ms / plain_step_ms")
    breakeven_tokens_per_step: float | None = Field(
        description="τ* = r: speculation pays above it (null: r > k + 1, it never pays)")
    breakeven_acceptance_rate: float | None = Field(
        description="(r − 1) / k: the draft acceptance rate at the break-even")
    measured_tokens_per_step: float = Field(
        description="τ this run made: a property of its weights (dummy or random: meaningless)")
    ceiling_speedup: float = Field(description="(k + 1) / r: every draft accepted")
    projections: list[Projection] = Field(default_factory=list)
    formula: str = Field("speedup(τ) = τ · plain_step_ms / step_ms = τ / r; "
                         "break-even τ* = r; acceptance rate at it (r − 1) / k")


def spec_cost(variant: str, baseline: str, scenario: str, k: int, spec: DecodeSteps,
              plain: DecodeSteps, published: Sequence[tuple[str, float]] = ()) -> SpecCost:
    """``spec`` (a variant drafting ``k``) against ``plain`` (its engine without
    speculation). ``published``: (label, speedup) pairs someone measured with real weights;
    each becomes the τ this GPU would need to match it (τ = speedup · r)."""
    r = spec.step_ms / (plain.decode_ms / plain.tokens)
    pays = r <= k + 1
    projections = [Projection(label=f"τ = {t}", tokens_per_step=float(t), speedup=t / r)
                   for t in range(1, k + 2)]
    projections += [Projection(label=f"to match {label} ({s:.2f}×)", tokens_per_step=s * r,
                               speedup=s) for label, s in published]
    return SpecCost(variant=variant, baseline=baseline, scenario=scenario, k=k,
                    step_ms=spec.step_ms, steps=spec.steps, server_steps=spec.server_steps,
                    plain_step_ms=plain.decode_ms / plain.tokens, cost_ratio=r,
                    breakeven_tokens_per_step=r if pays else None,
                    breakeven_acceptance_rate=(max(r - 1.0, 0.0) / k) if pays else None,
                    measured_tokens_per_step=spec.tokens_per_step,
                    ceiling_speedup=(k + 1) / r, projections=projections)
