"""The pure core on synthetic readings: counter deltas (units, wrap-around, a reset), the
window's energy and its bounds (also for a counter that lags its reads), integration where
there is no counter, the idle power and the energy above it, per token and per request,
peaks, clocks, throttle reasons, and null — never 0 — where a figure is not known."""

from __future__ import annotations

from collections.abc import Sequence

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


def test_every_field_of_one_devices_result() -> None:
    """The run's facts travel into the result unchanged, and each device's own row holds its
    figures (here the only device's, so the sums')."""
    sim = Sim(GPU, sm_clock=1980)
    device = sim.device("GPU 0")
    reads = [Sample(s.t_s, (Reading(counter=s.readings[0].counter,
                                    power_w=s.readings[0].power_w, sm_clock_mhz=1980,
                                    mem_clock_mhz=3201),)) for s in samples([sim], TIMES)]
    r = energy_figures("nvml", [device], reads, interval_s=0.1, idle=IDLE, window=LOAD,
                       output_tokens=1000, requests=10)
    assert r.source == "nvml" and r.interval_s == 0.1
    assert r.idle_window_s == pytest.approx(1.5)
    assert r.mem_clock_mhz is not None and r.mem_clock_mhz.mean == 3201
    (d,) = r.per_device
    assert (d.name, d.method, d.power_source) == ("GPU 0", "counter", "instant")
    assert d.energy_j == pytest.approx(3500.0, abs=0.01)
    assert d.avg_power_w == pytest.approx(700.0, abs=0.01)
    assert d.peak_power_w == 700.0 and d.idle_power_w == pytest.approx(75.0, abs=0.01)


def test_windows_hold_their_edges_and_interpolation_its_corners() -> None:
    assert Window(1.0, 2.0).holds(1.0) and Window(1.0, 2.0).holds(2.0)
    assert interpolate([(3.0, 7.0)], 3.0) == 7.0  # one point: its own time only
    assert interpolate([(3.0, 7.0)], 3.5) is None
    assert interpolate([(1.0, 5.0), (1.0, 5.0), (2.0, 9.0)], 1.0) == 5.0  # a repeated read


def _reads(counts: Sequence[tuple[float, int | None]]) -> list[Sample]:
    """One device's counter (no power sensor) read at the given times."""
    return [Sample(float(t), (Reading(counter=c),)) for t, c in counts]


#: a RAPL package: a counter in joules, no power sensor
PACKAGE = Device("package-0", counter_unit_j=1.0, power_source="none")


def _rapl(counts: Sequence[tuple[float, int | None]], idle: Window, window: Window
          ) -> EnergyResult:
    return energy_figures("rapl", [PACKAGE], _reads(counts), interval_s=1.0, idle=idle,
                          window=window, output_tokens=10, requests=1)


def _counts(values: list[int | None], unit: float = 1.0) -> list[tuple[float, float]]:
    device = Device("GPU 0", counter_unit_j=unit, power_source="none")
    points, why = counter_series(_reads(list(enumerate(values))), 0, device)
    assert why is None
    return points


def test_a_counter_starts_at_zero_and_skips_a_read_it_missed() -> None:
    assert _counts([100, 130, None, 190], unit=2.0) == [(0.0, 0.0), (1.0, 60.0), (3.0, 180.0)]


def test_a_counter_that_went_down_is_named_in_full() -> None:
    device = Device("GPU 3", counter_unit_j=1.0, power_source="instant")
    assert counter_series(_reads([(0.0, 50), (1.0, 10)]), 0, device) == ([], (
        "GPU 3: the energy counter went down (50 → 10: the driver was reloaded?); its energy "
        "is integrated from power instead"))


def test_the_bounds_read_one_point_beyond_each_edge() -> None:
    """Low: the reads inside, from the second one in; high: from the read before the start
    to the one after the first read at or past the end."""
    points = [(float(t), 10.0 * t * t) for t in range(8)]  # 0, 10, 40, 90, 160, 250, 360, 490
    inner = counter_energy(points, Window(0.5, 4.5))
    assert inner is not None and (inner.low, inner.high) == (160.0 - 40.0, 360.0 - 0.0)
    on_a_read = counter_energy(points, Window(0.5, 4.0))
    assert on_a_read is not None and on_a_read.high == 250.0 - 0.0
    second_last = counter_energy(points, Window(0.5, 5.5))
    assert second_last is not None and second_last.high == 490.0 - 0.0  # the last read
    last = counter_energy(points, Window(0.5, 6.5))
    assert last is not None and last.high is None  # no read after the one past the end
    assert counter_energy(points, Window(-1.0, 2.0)) is None  # begins before the first read
    assert integrated_energy(points, Window(-1.0, 2.0)) is None


def test_an_idle_window_without_length_or_reads_gives_no_idle_power() -> None:
    for idle in (Window(1.0, 1.0), Window(-3.0, -2.0)):
        assert figures([Sim(GPU)], idle=idle).idle_power_w is None
    # from power samples: their mean in the window, none when it holds no sample
    assert figures([Sim(GPU, counter=False)], idle=Window(-3.0, -2.0)).idle_power_w is None
    half = figures([Sim(GPU)], idle=Window(0.5, 1.0))
    assert half.idle_power_w == pytest.approx(75.0, abs=0.01)


def test_no_read_after_the_window_is_named_in_full() -> None:
    r = figures([Sim(GPU)], window=Window(2.05, 9.95))
    assert r.energy_j_bounds is None and r.flags == [
        "GPU 0: no read after the window: the energy's upper bound is unknown"]


def test_a_peak_from_counters_skips_a_missed_read_and_needs_two_reads() -> None:
    counts = list(enumerate([0, 10, None, 40, 45, 50]))
    r = _rapl(counts, idle=Window(0.0, 1.0), window=Window(0.5, 4.5))
    assert r.peak_power_w == 5.0  # 40→45: nothing across the missed read (10→40)
    one = _rapl(counts, idle=Window(0.0, 1.0), window=Window(3.5, 4.5))
    assert one.peak_power_w is None  # one read inside: no interval to read a peak over


def test_a_device_with_nothing_to_read_has_no_method_and_mixed_sources_no_one_source() -> None:
    mute = figures([Sim(GPU, counter=False, power=False)])
    assert mute.method is None and mute.energy_j is None
    assert mute.flags == ["the samples do not span the window (or a device gave neither "
                          "energy nor power): no energy figure"]
    mixed = figures([Sim(GPU), Sim(GPU, power=False)])
    assert mixed.peak_power_source is None


def test_only_a_negative_energy_above_idle_is_flagged() -> None:
    barely = figures([Sim(Profile([(0.0, 100.0), (2.05, 100.1), (7.05, 100.0)]))])
    assert barely.energy_above_idle_j == pytest.approx(0.5, abs=0.01)
    assert barely.flags == []
    below = figures([Sim(Profile([(0.0, 500.0), (2.0, 100.0)]))])
    assert below.flags == [
        "the energy above idle is negative: the load drew no more than the idle window did "
        "(a load too light to tell apart, or a device still busy before the scenario)"]


def test_a_repeated_sample_time_gives_no_step_and_no_division_by_zero() -> None:
    r = _rapl([(0.0, 0), (1.0, 10), (1.0, 10), (2.0, 16), (3.0, 20)], idle=Window(0.0, 1.0),
              window=Window(0.5, 2.5))
    assert r.peak_power_w == 6.0


def test_energy_exactly_at_idle_is_not_flagged_as_below_it() -> None:
    r = _rapl([(float(t), 100 * t) for t in range(6)], idle=Window(0.0, 2.0),
              window=Window(2.0, 4.0))
    assert r.energy_above_idle_j == 0.0 and r.flags == []
