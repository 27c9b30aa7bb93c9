"""The comparison of a shared key's value with ``vllm bench serve``'s, as a function that can
fail: what tests/integration/test_vllm_keys.py asks of every timing key, and what its mutation
test (and tests/unit/measure/test_vllm_compare.py) shows catching a wrong value.

Both tools measure the same script on their own scripted server. For each key three things
must hold, each with a tolerance fixed here (never derived from the values compared, so no
triangle inequality can make it pass):

* ours sits on our server's wire, computed with vLLM's definition (``WIRE_ABS_MS`` +
  ``WIRE_REL`` of the truth);
* vLLM's sits on its server's wire, late by at most its metric's ``LATE`` bound: vLLM's
  clock starts before it takes a pooled connection and its event loop reads late. Measured
  at concurrency 4 on two cores shared with other work: TTFT and E2EL +1.6 ms on the median,
  up to +7.6 ms on a p90 (so 12 ms); those are stamps taken after the wire's, never earlier
  than it by more than ``WIRE_ABS_MS``. TPOT and ITL are differences of two late stamps, so
  they err either way: an ITL whose first stamp was read late and whose second was not comes
  out short (CI, 2026-12-06: vLLM's p90 ITL 0.53 ms under its wire). Within 0.2 ms on the
  median, so 2 ms + 10 % of the value either side;
* the two tools' errors (each value minus its own server's wire) agree within the same bound:
  vLLM's lateness and no more. The two servers' wires may differ (one run on a busier CPU),
  which is why errors are compared, not values; no term of this bound comes from the values
  themselves. A value off by another definition (the first text for the role chunk, per chunk
  for per token, E2EL without TTFT), a unit, or a 20 ms shift breaks this rule on its own.

The lateness bounds hold on a machine that runs the suite alone (CI); on two cores shared
with three other test suites vLLM's client was measured up to 15 ms late on the mean TTFT and
60 ms on its p90, and this comparison then fails, naming vLLM's figure ("off its wire").
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["DIFFERENCES", "LATE", "WIRE_ABS_MS", "WIRE_REL", "disagreements"]

WIRE_ABS_MS, WIRE_REL = 0.5, 0.03
#: per metric: (ms, share of the value) vLLM's figure may lie after its wire and from ours
LATE: dict[str, tuple[float, float]] = {"ttft": (12.0, 0.10), "e2el": (12.0, 0.10),
                                        "tpot": (2.0, 0.10), "itl": (2.0, 0.10)}


#: the metrics that are differences of two of vLLM's stamps: their error has either sign
DIFFERENCES = frozenset({"tpot", "itl"})


def _early_bound(key: str, value: float) -> float:
    """How far under its wire vLLM's figure may lie: ``WIRE_ABS_MS`` for a stamp after the
    request's start, its late bound for a difference of two stamps."""
    return _late_bound(key, value) if key.split("_")[1] in DIFFERENCES else WIRE_ABS_MS


def _late_bound(key: str, value: float) -> float:
    metric = key.split("_")[1]
    abs_ms, rel = LATE[metric]
    return abs_ms + rel * abs(value)


def disagreements(ours: Mapping[str, float], ref: Mapping[str, float],
                  wire: Mapping[str, float], ref_wire: Mapping[str, float]) -> list[str]:
    """Every key of ``wire`` (``<stat>_<metric>_ms``) whose values break one of the three rules
    (module docstring), as ``"key: why"``; empty when all hold. ``ours``/``ref`` are the two
    tools' result JSONs; ``wire``/``ref_wire`` the keys computed from each server's truth."""
    out: list[str] = []
    for key, truth in wire.items():
        mine, theirs, their_truth = float(ours[key]), float(ref[key]), ref_wire[key]
        if abs(mine - truth) > WIRE_ABS_MS + WIRE_REL * abs(truth):
            out.append(f"{key}: ours {mine:.3f} off our wire {truth:.3f}")
        late = theirs - their_truth
        if late < -_early_bound(key, their_truth) or late > _late_bound(key, their_truth):
            out.append(f"{key}: vLLM's {theirs:.3f} off its wire {their_truth:.3f}")
        if abs((mine - truth) - late) > _late_bound(key, their_truth):
            out.append(f"{key}: ours {mine:.3f} against vLLM's {theirs:.3f} (wires {truth:.3f} "
                       f"and {their_truth:.3f})")
    return out
