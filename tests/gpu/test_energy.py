"""Energy through NVML on a real GPU (skipped where no NVIDIA driver is present; run on a GPU
machine: ``pytest tests/gpu``): the reader's values, and the sampler's figures over a few
seconds of idling GPU, whose counter energy must agree with its instantaneous power
integrated (both within the bounds)."""

from __future__ import annotations

import time

import pytest

from benchlib.energy import EnergySampler, NvmlReader, Window, integrated_energy


def reader() -> NvmlReader:
    try:
        return NvmlReader(None)
    except RuntimeError as exc:
        pytest.skip(str(exc))


def test_every_gpu_gives_a_counter_power_and_clocks() -> None:
    r = reader()
    try:
        first = r.read()
        time.sleep(0.5)
        second = r.read()
    finally:
        r.close()
    for device, a, b in zip(r.devices, first, second, strict=True):
        assert device.name.startswith("GPU ") and device.power_source != "none"
        assert a.counter is not None and b.counter is not None and b.counter > a.counter
        assert a.power_w is not None and 5.0 < a.power_w < 2000.0
        assert a.sm_clock_mhz and a.mem_clock_mhz


def test_the_counter_agrees_with_the_power_integrated() -> None:
    sampler = EnergySampler(reader(), interval_s=0.1, idle_s=1.0)
    sampler.start()
    start = time.perf_counter()
    time.sleep(3.0)
    window = Window(start, time.perf_counter())
    result = sampler.stop(window, output_tokens=100, requests=1)
    assert result.method == "counter" and result.energy_j is not None
    assert result.energy_j_bounds is not None
    low, high = result.energy_j_bounds
    points = [(s.t_s, sum(r.power_w for r in s.readings if r.power_w is not None))
              for s in sampler.samples]
    integrated = integrated_energy(points, window)
    assert integrated is not None
    # an idle GPU's power is steady: its integral lies within the counter's bounds, give
    # or take the sensors' disagreement (an idle H200: 74.5 W by the counter, 77.3 W
    # instantaneous)
    assert 0.9 * low <= integrated <= 1.1 * high
    assert result.idle_power_w is not None and result.avg_power_w is not None
    assert result.samples >= 25 and result.idle_at_rest is not None
