"""What speculation costs per step: steps counted on the wire (one event per step, or a
step's tokens in a burst), the server's count beside, the cost ratio against the engine's
own plain step, the break-even and the projections."""

from __future__ import annotations

import pytest

from benchlib.measure import RequestRecord
from benchlib.measure.stats._step_cost import (
    BURST_FRACTION,
    decode_steps,
    request_decode_rate,
    spec_cost,
)

from ._outcomes import outcome


def _request(index: int, tokens: int, gaps: list[float], ttft: float = 100.0) -> RequestRecord:
    """A finished request of ``tokens`` output tokens whose events after the first came
    ``gaps`` ms apart (one event each)."""
    base = RequestRecord.from_outcome(outcome(index, 0, 5, [1, 1], 3), [1.0] * 3, 0)
    decode = sum(gaps)
    return base.model_copy(update={
        "success": True, "ttft_ms": ttft, "e2el_ms": ttft + decode, "output_tokens": tokens,
        "tpot_ms": decode / (tokens - 1), "itl_ms": gaps, "itl_text_only_ms": gaps,
        "coalesced_gaps": 0})


def test_plain_steps_make_one_token_each() -> None:
    plain = decode_steps([_request(0, 11, [10.0] * 10), _request(1, 6, [10.0] * 5)])
    assert plain is not None and plain.server_steps is None
    assert plain.tokens == 15 and plain.steps == 15
    assert plain.step_ms == pytest.approx(10.0) and plain.tokens_per_step == 1.0


def test_the_servers_count_stands_beside_the_wires() -> None:
    # 21 tokens after the first in 14 steps of 30 ms (one event each); the server counted 9
    # accepted drafts, 2 of them past max_tokens (never sent): it says 12 steps
    spec = decode_steps([_request(0, 22, [30.0] * 14)], accepted=9.0)
    assert spec is not None and spec.server_steps == 12
    assert spec.steps == 14 and spec.step_ms == pytest.approx(30.0)
    assert spec.tokens_per_step == pytest.approx(1.5)


def test_tokens_streamed_one_event_each_are_grouped_into_their_steps() -> None:
    # four steps of 40 ms, each making 3 tokens written back to back (0.05 ms apart)
    gaps = [0.05, 0.05, 40.0] * 3 + [0.05, 0.05]
    spec = decode_steps([_request(0, 12, gaps)])
    assert spec is not None
    assert spec.steps == 3  # the three step boundaries after the first token's step
    assert spec.step_ms == pytest.approx(sum(gaps) / 3)
    assert BURST_FRACTION * 40.0 > 0.05


def test_break_even_and_projections_follow_the_cost_ratio() -> None:
    plain = decode_steps([_request(0, 101, [10.0] * 100)])
    spec = decode_steps([_request(0, 101, [25.0] * 100)], accepted=0.0)
    assert plain is not None and spec is not None
    cost = spec_cost("v-spec", "v-off", "chat", 4, spec, plain,
                     published=[("the seed's 1.58×", 1.58)])
    assert cost.cost_ratio == pytest.approx(2.5)
    assert cost.breakeven_tokens_per_step == pytest.approx(2.5)
    assert cost.breakeven_acceptance_rate == pytest.approx(1.5 / 4)
    assert cost.ceiling_speedup == pytest.approx(5 / 2.5)
    assert [p.speedup for p in cost.projections[:5]] == pytest.approx(
        [1 / 2.5, 2 / 2.5, 3 / 2.5, 4 / 2.5, 5 / 2.5])
    assert cost.projections[-1].tokens_per_step == pytest.approx(1.58 * 2.5)


def test_a_step_dearer_than_k_plus_one_plain_steps_never_pays() -> None:
    plain = decode_steps([_request(0, 11, [10.0] * 10)])
    spec = decode_steps([_request(0, 11, [60.0] * 10)], accepted=0.0)
    assert plain is not None and spec is not None
    cost = spec_cost("v", "off", "chat", 4, spec, plain)
    assert cost.breakeven_tokens_per_step is None and cost.breakeven_acceptance_rate is None
    assert cost.ceiling_speedup < 1


def test_the_seeds_speed_is_the_mean_of_each_requests_rate() -> None:
    fast, slow = _request(0, 11, [5.0] * 10), _request(1, 11, [20.0] * 10)
    assert request_decode_rate([fast, slow]) == pytest.approx((200.0 + 50.0) / 2)
    assert request_decode_rate([]) is None
