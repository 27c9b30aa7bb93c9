"""Request send times, precomputed and seeded (vLLM's ``--request-rate`` / ``--burstiness``)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["arrival_offsets"]


def arrival_offsets(n: int, request_rate: float, burstiness: float, seed: int) -> list[float]:
    """Seconds from the start at which each of ``n`` requests is released.

    ``request_rate`` = inf releases all at once. Otherwise gaps are gamma-distributed with shape
    ``burstiness`` and mean ``1/request_rate`` (Poisson arrivals at burstiness 1); the first
    request goes at 0.
    """
    if n <= 0:
        return []
    if math.isinf(request_rate):
        return [0.0] * n
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (request_rate * burstiness), size=n - 1)
    return [0.0, *np.cumsum(gaps).tolist()]
