"""Request send times, precomputed and seeded, as ``vllm bench serve`` schedules them.

Same rule as the reference (serve.py ``get_request``): one gap per request (the first request
waits for its own gap too), gamma-distributed with shape ``burstiness`` and mean
``1/request_rate`` (Poisson at burstiness 1, fixed gaps at burstiness inf), summed, then
rescaled so the last request goes out at exactly ``n / request_rate``. The gaps come from
numpy's legacy generator seeded with ``seed``, the stream the reference draws from after
``np.random.seed(seed)``, so the same seed gives the same schedule in both tools.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["arrival_offsets"]


def arrival_offsets(n: int, request_rate: float, burstiness: float, seed: int) -> list[float]:
    """Seconds from the start at which each of ``n`` requests is released."""
    if n <= 0:
        return []
    if math.isinf(request_rate):
        return [0.0] * n
    if math.isinf(burstiness):
        gaps = np.full(n, 1.0 / request_rate)
    else:
        rng = np.random.RandomState(seed)
        gaps = rng.gamma(shape=burstiness, scale=1.0 / (request_rate * burstiness), size=n)
    times = np.cumsum(gaps)
    times *= (n / request_rate) / times[-1]
    return [float(t) for t in times]
