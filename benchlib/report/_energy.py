"""The report's energy: a row per measurement (joules per output token beside TPOT, the
watts, what the figures include, and why there are none where there are none), and the
power over time of each scenario's busiest measurement per variant, read from the samples
the measure step kept (``<result>.energy.jsonl``), the idle window before it shaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchlib.energy import ClockStats
from benchlib.report._figures import _png
from benchlib.report._view import RunView

__all__ = ["ENERGY_COLUMNS", "energy_rows", "power_png", "read_power"]

ENERGY_COLUMNS = ["variant", "scenario", "concurrency", "median_tpot_ms",
                  "energy_j_per_output_token", "energy_above_idle_j_per_output_token",
                  "energy_j_per_request", "avg_power_w", "peak_power_w", "peak_power_source",
                  "idle_power_w", "idle_at_rest", "energy_includes_idle", "energy_j",
                  "energy_j_bounds",
                  "method", "source", "sm_clock_mhz", "throttle_reasons", "notes"]

#: the columns read from the energy block as they are
_FIGURES = ("energy_j_per_output_token", "energy_above_idle_j_per_output_token",
            "energy_j_per_request", "avg_power_w", "peak_power_w", "peak_power_source",
            "idle_power_w", "idle_at_rest", "energy_includes_idle", "energy_j")


def _clock(stats: ClockStats | None) -> str | None:
    if stats is None:
        return None
    return f"{stats.min}–{stats.max} (mean {stats.mean or 0:.0f})"


def energy_rows(view: RunView) -> list[dict[str, object]]:
    """One row per measurement that has an energy block (the table's rows)."""
    rows: list[dict[str, object]] = []
    for v, scenario, conc, m in view.measurements():
        energy = m.energy
        if energy is None:
            continue
        bounds = energy.energy_j_bounds
        rows.append({
            "variant": v.label, "scenario": scenario, "concurrency": conc,
            "median_tpot_ms": m.median_tpot_ms,
            **energy.model_dump(mode="json", include=set(_FIGURES)),
            "energy_j_bounds": f"{bounds[0]:.1f}–{bounds[1]:.1f}" if bounds else None,
            "method": energy.method, "source": energy.source,
            "sm_clock_mhz": _clock(energy.sm_clock_mhz),
            "throttle_reasons": ", ".join(f"{r} {100 * f:.0f} %"
                                          for r, f in energy.throttle_reasons.items())
            or None,
            "notes": "; ".join(filter(None, [energy.reason, *energy.flags])) or None})
    return rows


def read_power(path: Path) -> tuple[dict[str, Any], list[float], list[float | None]]:
    """A samples file's header, times (s) and summed power (W) per sample: the devices'
    power readings where every device gave one, else the counters' increase since the
    previous sample (RAPL). The header is the file's JSON (a JSON boundary)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    times: list[float] = []
    power: list[float | None] = []
    previous: tuple[float, list[float | None]] | None = None
    for line in lines[1:]:
        s = json.loads(line)
        watts = s.get("power_w") or []
        energy = s.get("energy_j") or []
        if watts and None not in watts:
            power.append(float(sum(watts)))
        elif previous is not None and energy and None not in energy and \
                None not in previous[1] and s["t_s"] > previous[0]:
            power.append(sum(e - p for e, p in zip(energy, previous[1], strict=True)
                             if e is not None and p is not None) / (s["t_s"] - previous[0]))
        else:
            power.append(None)
        times.append(float(s["t_s"]))
        previous = (s["t_s"], energy)
    return header, times, power


def power_png(view: RunView) -> bytes | None:
    """Per scenario, each variant's summed power over time at its highest concurrency
    measured with energy, time 0 at the window's start, the idle window before it shaded;
    None when no samples file is kept (beside the variant's measurements)."""
    from matplotlib.figure import Figure

    busiest: dict[str, dict[str, tuple[int, Path]]] = {}
    for v, scenario, conc, m in view.measurements():
        name = m.energy.samples_file if m.energy else None
        folder = view.folder.variant(v.name).measure_dir
        if name and (folder / name).is_file():
            by_variant = busiest.setdefault(scenario, {})
            best = by_variant.get(v.label)
            if best is None or conc > best[0]:
                by_variant[v.label] = (conc, folder / name)
    if not busiest:
        return None
    fig = Figure(figsize=(5.2 * len(busiest), 3.6), layout="constrained")
    axes = fig.subplots(1, len(busiest), squeeze=False)[0]
    for ax, (scenario, lines) in zip(axes, busiest.items(), strict=True):
        for variant, (conc, path) in lines.items():
            header, times, power = read_power(path)
            window = header.get("window_s") or [0.0, 0.0]
            xs = [t - window[0] for t in times]
            ax.plot(xs, [float("nan") if p is None else p for p in power], linewidth=1,
                    label=f"{variant} c{conc}")
            idle = header.get("idle_window_s")
            if idle:
                ax.axvspan(idle[0] - window[0], idle[1] - window[0], color="0.85", zorder=0)
            ax.axvline(window[1] - window[0], color="0.5", linestyle=":", linewidth=0.8)
        ax.axvline(0.0, color="0.5", linestyle=":", linewidth=0.8)
        ax.set_title(scenario)
        ax.set_xlabel("seconds from the measurement's start")
        ax.set_ylabel("power, devices summed (W)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _png(fig)
