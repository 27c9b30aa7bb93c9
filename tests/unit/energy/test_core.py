"""The pure core on synthetic readings: counter deltas (units, wrap-around, a reset), the
window's energy and its bounds (also for a counter that lags its reads), integration where
there is no counter, the idle power and the energy above it, per token and per request,
peaks, clocks, throttle reasons, and null — never 0 — where a figure is not known."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlib.energy import (
    Device,
    EnergyResult,
    Reading,
    Sample,
    Source,
    Window,
    counter_energy,
    counter_series,
    energy_figures,
    integrated_energy,
    interpolate,
)

from ._simulate import Profile, Sim, samples, ticks

#: idle at 75 W until 2 s, the load at 700 W until 7.5 s, then 110 W (clocks still up)
GPU = Profile([(0.0, 75.0), (2.0, 700.0), (7.5, 110.0)])
TIMES = ticks(0.0, 10.0, 0.1)
IDLE = Window(0.0, 1.5)
LOAD = Window(2.05, 7.05)


def figures(sims: list[Sim], times: list[float] = TIMES, window: Window = LOAD,
            idle: Window = IDLE, tokens: int | None = 1000, requests: int | None = 10,
            source: Source = "nvml") -> EnergyResult:
    devices = [s.device(f"GPU {k}") for k, s in enumerate(sims)]
    return energy_figures(source, devices,
                          samples(sims, times), interval_s=0.1, idle=idle, window=window,
                          output_tokens=tokens, requests=requests)


def test_counter_energy_over_the_window_per_token_and_request() -> None:
    r = energy_figures("nvml", [Sim(GPU).device("GPU 0")], samples([Sim(GPU)], TIMES),
                       interval_s=0.1, idle=IDLE, window=LOAD, output_tokens=1000,
                       requests=10)
    assert r.method == "counter" and r.reason is None
    assert r.energy_j == pytest.approx(3500.0, abs=0.01)
    assert r.energy_j_bounds is not None
    low, high = r.energy_j_bounds
    assert low <= 3500.0 <= high and high - low < 2 * 0.2 * 700 + 1
    assert r.idle_power_w == pytest.approx(75.0, abs=0.01)
    assert r.avg_power_w == pytest.approx(700.0, abs=0.01)
    assert r.energy_above_idle_j == pytest.approx(3500.0 - 75.0 * 5.0, abs=0.01)
    assert r.energy_j_per_output_token == pytest.approx(3.5, abs=1e-4)
    assert r.energy_above_idle_j_per_output_token == pytest.approx(3.125, abs=1e-4)
    assert r.energy_j_per_request == pytest.approx(350.0, abs=0.01)
    assert r.energy_includes_idle is True
    assert r.peak_power_w == 700.0 and r.peak_power_source == "instant"
    assert r.window_s == pytest.approx(5.0) and r.samples == 50
    assert r.flags == []


def test_every_device_is_summed() -> None:
    other = Profile([(0.0, 60.0), (2.0, 300.0), (5.0, 500.0)])
    r = figures([Sim(GPU), Sim(other)])
    assert r.energy_j == pytest.approx(3500.0 + 300.0 * 2.95 + 500.0 * 2.05, abs=0.02)
    assert r.idle_power_w == pytest.approx(135.0, abs=0.01)
    assert r.peak_power_w == 1200.0
    assert [d.energy_j for d in r.per_device] == pytest.approx(
        [3500.0, 300.0 * 2.95 + 500.0 * 2.05], abs=0.02)
    assert r.devices == ["GPU 0", "GPU 1"]


def test_a_wrapping_counter_is_unwrapped() -> None:
    """A RAPL counter of µJ wrapping every 1 J at 3 W: it wraps every third read."""
    cpu = Profile([(0.0, 3.0)])
    sim = Sim(cpu, unit_j=1e-6, wrap=1_000_000, power=False, offset=999_000)
    points, why = counter_series(samples([sim], TIMES), 0, sim.device("package-0"))
    assert why is None
    assert points[-1][1] == pytest.approx(30.0, abs=1e-5)
    r = figures([sim], source="rapl")
    assert r.energy_j == pytest.approx(15.0, abs=1e-4)
    assert r.avg_power_w == pytest.approx(3.0, abs=1e-4)
    # without power readings the peak is a counter increase over one interval
    assert r.peak_power_w == pytest.approx(3.0, abs=1e-3) and r.peak_power_source == "none"


def test_a_counter_that_went_down_falls_back_to_power() -> None:
    device = Device("GPU 0", counter_unit_j=1e-3, power_source="instant")
    readings = [Sample(t, (Reading(counter=c, power_w=100.0),))
                for t, c in [(0.0, 5000), (1.0, 105000), (2.0, 400), (3.0, 100400)]]
    points, why = counter_series(readings, 0, device)
    assert points == [] and why is not None and "went down" in why
    r = energy_figures("nvml", [device], readings, interval_s=1.0, idle=Window(0.0, 1.0),
                       window=Window(1.0, 3.0), output_tokens=10, requests=1)
    assert r.method == "integrated_power"
    assert r.energy_j == pytest.approx(200.0)
    assert any("went down" in f for f in r.flags)


def test_no_counter_integrates_power_and_says_so() -> None:
    r = figures([Sim(GPU, counter=False)])
    assert r.method == "integrated_power" and r.energy_j_bounds is None
    # trapezoids over 100 ms samples of a step: exact away from the step, half a step off
    # on the interval that holds it
    assert r.energy_j == pytest.approx(3500.0, abs=0.1 * 700)
    assert r.idle_power_w == pytest.approx(75.0)
    assert any("integrated" in f for f in r.flags)


def test_a_figure_not_known_is_null_not_zero() -> None:
    late = Window(20.0, 25.0)  # after the last sample
    r = figures([Sim(GPU)], window=late)
    assert r.energy_j is None and r.energy_j_per_output_token is None
    assert r.avg_power_w is None and r.energy_includes_idle is None
    assert any("do not span" in f for f in r.flags)
    no_tokens = figures([Sim(GPU)], tokens=0, requests=0)
    assert no_tokens.energy_j_per_output_token is None and no_tokens.energy_j_per_request \
        is None
    # one GPU without energy or power: no sum that would look like every GPU's
    mute = Sim(GPU, counter=False, power=False)
    assert figures([Sim(GPU), mute]).energy_j is None


def test_clocks_and_throttle_reasons_in_the_window() -> None:
    capped = Sim(GPU, sm_clock=1500, throttle=("sw_power_cap",))
    other = Sim(GPU, sm_clock=1980)
    r = figures([capped, other])
    assert r.sm_clock_mhz is not None
    assert (r.sm_clock_mhz.min, r.sm_clock_mhz.max) == (1500, 1980)
    assert r.sm_clock_mhz.mean == pytest.approx(1740.0)
    assert r.mem_clock_mhz is None
    assert r.throttle_reasons == {"sw_power_cap": 1.0}


def test_whether_the_idle_window_was_at_rest() -> None:
    awake = Sim(GPU, throttle=("sw_power_cap",))  # never gpu_idle
    parked = Sim(GPU, throttle=("gpu_idle",))
    assert figures([awake]).idle_at_rest is False
    assert figures([parked]).idle_at_rest is True
    assert figures([parked, awake]).idle_at_rest is False  # every GPU, or not at rest
    assert figures([Sim(GPU)]).idle_at_rest is None  # no clock events named (RAPL)


def test_energy_above_idle_below_zero_is_flagged() -> None:
    busy_then_quiet = Profile([(0.0, 500.0), (2.0, 100.0)])
    r = figures([Sim(busy_then_quiet)])
    assert r.energy_above_idle_j is not None and r.energy_above_idle_j < 0
    assert any("negative" in f for f in r.flags)


def test_interpolate_and_integrate() -> None:
    pts = [(0.0, 0.0), (1.0, 10.0), (2.0, 30.0)]
    assert interpolate(pts, 0.0) == 0.0
    assert interpolate(pts, 1.5) == 20.0
    assert interpolate(pts, 2.5) is None and interpolate([], 0.0) is None
    assert integrated_energy([(0.0, 100.0), (1.0, 100.0), (2.0, 300.0)],
                             Window(0.5, 1.5)) == pytest.approx(100.0 * 0.5 + 0.5 * 150.0)


@settings(max_examples=200, deadline=None)
@given(watts=st.lists(st.floats(10.0, 1000.0), min_size=3, max_size=8),
       lag=st.floats(0.0, 1.0), start=st.floats(1.0, 4.0), length=st.floats(0.05, 4.0),
       jitter=st.floats(0.0, 0.03))
def test_the_bounds_hold_for_a_lagging_counter(watts: list[float], lag: float, start: float,
                                               length: float, jitter: float) -> None:
    """Whatever the power, for a counter up to one read gap behind its reads (reads 100 ms
    apart, give or take ``jitter``), the true energy lies within the bounds."""
    profile = Profile([(i * 0.7, w) for i, w in enumerate(watts)])
    times = [t + (jitter if i % 2 else 0.0) for i, t in enumerate(ticks(0.0, 10.0, 0.1))]
    sim = Sim(profile, lag_s=lag * (0.1 - jitter), unit_j=1e-3)
    points, _ = counter_series(samples([sim], times), 0, sim.device("GPU 0"))
    window = Window(start, start + length)
    got = counter_energy(points, window)
    assert got is not None and got.low is not None and got.high is not None
    truth = profile.between(window.start_s, window.end_s)
    assert got.low - 1e-3 <= truth <= got.high + 1e-3
    assert got.low <= got.estimate <= got.high
