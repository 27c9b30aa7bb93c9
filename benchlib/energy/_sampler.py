"""Sampling a reader around a scenario in a thread of its own, without touching the
measurement: :class:`EnergySampler` reads every ``interval_s`` (100 ms by default) from
:meth:`~EnergySampler.start` to :meth:`~EnergySampler.stop`.

:meth:`~EnergySampler.start` returns once the idle window (``idle_s``, 1.5 s by default) has
been read: it is called just before the scenario's requests (warmups included), so the idle
power is the devices' draw with the engine loaded and nothing asked of it.
:meth:`~EnergySampler.stop` is given the scenario's own window afterwards (the result's
``duration``, on the ``time.perf_counter`` clock of its ``start_times``) and reads on until
two samples lie past its end (the bounds need a read one interval beyond the first one
after the window: at most about two intervals more), then hands the samples to
:func:`~benchlib.energy.energy_figures`.

Each sample is stamped with the middle of its read (reading eight GPUs takes about 25 ms);
a read that raises is a sample without values and a flag, never an exception in the
measurement.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from benchlib.energy._core import Window, counter_series, energy_figures
from benchlib.energy._readings import EnergyReader, Reading, Sample
from benchlib.energy._result import EnergyResult

__all__ = ["EnergySampler"]

_IDLE_GRACE_S = 10.0  # how long start() waits past idle_s for a reader that hangs


class EnergySampler:
    """Reads ``reader`` every ``interval_s`` in a daemon thread; the first ``idle_s`` of
    reads are the idle window. The reader is closed by :meth:`stop`."""

    def __init__(self, reader: EnergyReader, *, interval_s: float = 0.1,
                 idle_s: float = 1.5) -> None:
        if interval_s <= 0 or idle_s <= 0:
            raise ValueError("interval_s and idle_s must be > 0")
        self.reader = reader
        self.interval_s = interval_s
        self.idle_s = idle_s
        self._samples: list[Sample] = []
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._idle_read = threading.Event()
        self._idle: Window | None = None
        self._errors: list[str] = []
        self._thread: threading.Thread | None = None
        self.result: EnergyResult | None = None

    def _take(self) -> None:
        before = time.perf_counter()
        try:
            readings = self.reader.read()
        except Exception as exc:  # a reader's fault is a flag, never a crash of the run
            readings = tuple(Reading() for _ in self.reader.devices)
            self._errors.append(f"{type(exc).__name__}: {exc}")
        sample = Sample((before + time.perf_counter()) / 2, readings)
        with self._lock:
            self._samples.append(sample)
            first = self._samples[0].t_s
        if self._idle is None and sample.t_s - first >= self.idle_s:
            self._idle = Window(first, sample.t_s)
            self._idle_read.set()

    def _run(self) -> None:
        t0 = time.perf_counter()
        tick = 0
        while True:
            self._take()
            # a slow read skips the ticks it overran rather than bunching up
            tick = max(tick + 1, int((time.perf_counter() - t0) / self.interval_s) + 1)
            due = t0 + tick * self.interval_s
            if self._stop_event.wait(max(0.0, due - time.perf_counter())):
                return

    def start(self) -> None:
        """Start reading; return once the idle window has been read."""
        if self._thread is not None:
            raise RuntimeError("this sampler was already started")
        self._thread = threading.Thread(target=self._run, name="benchlib-energy", daemon=True)
        self._thread.start()
        self._idle_read.wait(self.idle_s + _IDLE_GRACE_S)

    @property
    def samples(self) -> list[Sample]:
        """The samples so far, in order."""
        with self._lock:
            return list(self._samples)

    @property
    def idle(self) -> Window | None:
        """The idle window (None: start() has not read it yet)."""
        return self._idle

    def _read_past(self, end_s: float) -> None:
        """Wait (at most about three intervals) until two samples lie past ``end_s``."""
        deadline = time.perf_counter() + 3 * self.interval_s + 1.0
        while time.perf_counter() < deadline:
            with self._lock:
                if sum(s.t_s > end_s for s in self._samples[-3:]) >= 2:
                    return
            time.sleep(self.interval_s / 4)

    def stop(self, window: Window | None, *, output_tokens: int | None = None,
             requests: int | None = None) -> EnergyResult:
        """Stop reading and return the figures over ``window`` (None: no request was sent,
        so there is no window and no figure)."""
        if self._thread is None:
            raise RuntimeError("start() the sampler first")
        if self.result is not None:
            return self.result
        if window is not None and self._thread.is_alive():
            self._read_past(window.end_s)
        self._stop_event.set()
        self._thread.join()
        self.reader.close()
        devices = list(self.reader.devices)
        names = [d.name for d in devices]
        if self._idle is None:
            self.result = EnergyResult(source=self.reader.source, devices=names,
                                       reason=f"the idle window was not read within "
                                              f"{self.idle_s + _IDLE_GRACE_S:g} s")
        elif window is None:
            self.result = EnergyResult(source=self.reader.source, devices=names,
                                       reason="no request was sent: no window to measure")
        else:
            result = energy_figures(self.reader.source, devices, self.samples,
                                    interval_s=self.interval_s, idle=self._idle,
                                    window=window, output_tokens=output_tokens,
                                    requests=requests)
            errors = ([f"{len(self._errors)} read(s) failed, the first: {self._errors[0]}"]
                      if self._errors else [])
            self.result = result.model_copy(update={"flags": [*result.flags, *errors]})
        return self.result

    def write_samples(self, path: Path, window: Window | None) -> None:
        """The samples as JSONL for plots: a header line (devices, the clock's origin, the
        idle and measurement windows in seconds from it), then per sample its time, each
        device's power, energy since the first read (wraps undone), clocks and throttle
        reasons."""
        samples = self.samples
        if not samples:
            return
        t0 = samples[0].t_s
        devices = self.reader.devices
        energy = [dict(counter_series(samples, k, d)[0]) for k, d in enumerate(devices)]

        def rel(w: Window | None) -> list[float] | None:
            return None if w is None else [w.start_s - t0, w.end_s - t0]

        lines = [json.dumps({"devices": [d.name for d in devices], "t0_perf_counter_s": t0,
                             "interval_s": self.interval_s, "idle_window_s": rel(self._idle),
                             "window_s": rel(window)})]
        for s in samples:
            lines.append(json.dumps({
                "t_s": round(s.t_s - t0, 6),
                "power_w": [r.power_w for r in s.readings],
                "energy_j": [energy[k].get(s.t_s) for k in range(len(devices))],
                "sm_clock_mhz": [r.sm_clock_mhz for r in s.readings],
                "mem_clock_mhz": [r.mem_clock_mhz for r in s.readings],
                "throttle": [list(r.throttle) for r in s.readings]}))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
