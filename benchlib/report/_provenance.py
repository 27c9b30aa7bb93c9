"""The report's provenance card: one card for the whole run, a fact every variant shares
shown once, a fact that differs shown with each variant's value beside its name (marked), so
a reader sees at once what differed between the machines and engines the variants ran on."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from benchlib.report._view import RunView
from benchlib.report._writeup import fmt_number

__all__ = ["provenance_card"]


def _words(*parts: object) -> str:
    """The parts that are known, joined by spaces; ``n/a`` when none is."""
    known = [str(p) for p in parts if p not in (None, "", False)]
    return " ".join(known) or "n/a"


def _onoff(value: Any) -> str:
    return "–" if value is None else ("on" if value else "off")


def _gpu_details(start: list[dict[str, Any]], end: list[dict[str, Any]]) -> dict[str, str]:
    """The first GPU's link, modes and clocks, at the step's start and (when captured) its
    end: an idle GPU parks its clocks low, so the end shows what the measurement ran at."""
    if not start:
        return {}
    g = start[0]
    out = {"PCIe": f"gen {_words(g.get('pcie_gen'))} x{_words(g.get('pcie_width'))} (max gen "
                   f"{_words(g.get('pcie_gen_max'))} x{_words(g.get('pcie_width_max'))})",
           "persistence / ECC / MIG": f"{_onoff(g.get('persistence_mode'))} / "
                                      f"{_onoff(g.get('ecc_enabled'))} / "
                                      f"{_onoff(g.get('mig_enabled'))}",
           "application clocks": f"SM {_words(g.get('app_sm_clock_mhz'))} MHz, memory "
                                 f"{_words(g.get('app_mem_clock_mhz'))} MHz"}
    for label, cap in (("at start", g), ("at end", end[0] if end else None)):
        if cap is not None:
            out[f"clock / power {label}"] = (
                f"SM {_words(cap.get('sm_clock_mhz'))} MHz, {_words(cap.get('power_draw_w'))} W"
                f" of {_words(cap.get('power_limit_w'))} W, {_words(cap.get('temperature_c'))}"
                " °C")
    return out


def _facts(prov: Mapping[str, Any]) -> dict[str, str]:
    """One provenance record's facts as the card shows them."""
    hw = prov.get("hardware") or {}
    gpus = hw.get("gpus") or []
    cpu = hw.get("cpu") or {}
    engine = prov.get("engine") or {}
    model = prov.get("model") or {}
    synthetic = prov.get("synthetic")
    return {k: str(fmt_number(v)) for k, v in {
        "measured on": ("benchlib's scripted server (synthetic: canned timings, no engine)"
                        if synthetic else "n/a" if synthetic is None else "the engine"),
        "engine": _words(engine.get("name"), engine.get("version")),
        "GPUs": ", ".join(f"{g.get('name')} ({g.get('memory_total_gib')} GiB, "
                          f"{g.get('power_limit_w')} W)" for g in gpus) or
        f"none ({hw.get('nvml_error') or 'no NVIDIA driver'})",
        "driver / CUDA": f"{_words(hw.get('driver_version'))} / "
                         f"{_words(hw.get('cuda_driver_version'))}",
        **_gpu_details(gpus, (prov.get("hardware_end") or {}).get("gpus") or []),
        "CPU": f"{_words(cpu.get('model'))} ({_words(cpu.get('logical_cores'))} logical "
               "cores)",
        "model": _words(model.get("id"), model.get("resolved_revision") and
                        f"@ {model.get('resolved_revision')}"),
        "kit": _words(prov.get("kit_commit"), prov.get("kit_dirty") and "(dirty)"),
        "python": prov.get("python"),
        "hardware mismatches": "; ".join(prov.get("hardware_mismatches") or []) or "none",
    }.items()}


def provenance_card(view: RunView) -> str:
    """One card for the whole run: a fact every variant shares once, a fact that differs
    with each variant's value beside its name (marked)."""
    records = {v.label: _facts(v.provenance) for v in view.variants if v.provenance}
    if not records:
        return "<h2 id='provenance'>Provenance</h2><p class='muted'>none recorded</p>"
    keys = list(dict.fromkeys(k for facts in records.values() for k in facts))
    rows = []
    for key in keys:
        values = {name: facts.get(key, "n/a") for name, facts in records.items()}
        if len(set(values.values())) == 1:
            shown = html.escape(next(iter(values.values())))
            label = html.escape(key)
        else:
            shown = "<br>".join(f"{html.escape(n)}: {html.escape(v)}" for n, v in values.items())
            label = f"<span class='warn'>{html.escape(key)} (differs)</span>"
        rows.append(f"<b>{label}</b><span>{shown}</span>")
    return ("<h2 id='provenance'>Provenance</h2><p class='muted'>"
            + html.escape(", ".join(records)) + ": one card, a fact that differs between "
            "them marked with each one's value.</p><div class='card'>" + "".join(rows)
            + "</div>")
