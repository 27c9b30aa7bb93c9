"""The report page: one self-contained HTML file (no scripts, no network: styles inline,
figures as data: URIs) that a browser opens offline.

Sections, in reading order: the write-up; what ran (variants, scenarios, the commands); the
provenance card; the functional checks and what an application sees (openai SDK); the plan
against the live engine (weights, KV budget, KV tokens and blocks as the engine reported them
at launch, a difference above 2 % flagged); the plan against what was measured (TPOT against
the decode floor, joules per output token beside it, peak KV use against the plan's
expectation); energy (every measurement's joules, watts and idle draw, and the power over
time); the figures (Pareto view,
TTFT and TPOT spread per concurrency, and the SLO searches' curves with their knees when the
run folder keeps any); speculative acceptance (each speedup with its 95 % interval); the
headline figures with their intervals, each variant's over the baseline's with a verdict,
TTFT from the schedule where it differs and a conversations run's per-turn view (each only
when the run has one: :mod:`benchlib.report._intervals`); published references; caveats
and every provenance difference; and an appendix of the names a write-up can cite.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from typing import Any

from markdown_it import MarkdownIt

from benchlib.report._context import Context
from benchlib.report._energy import ENERGY_COLUMNS, energy_rows
from benchlib.report._figures import pareto_png, spread_png, sweep_png
from benchlib.report._intervals import interval_sections
from benchlib.report._view import RunView
from benchlib.report._writeup import fmt_number

__all__ = ["FIGURES", "render_html"]

#: the figures every report carries (their ids), when anything was measured
FIGURES = ("pareto", "spread")
#: a laptop's page: nothing wider than the viewport (tests/browser holds it at 1,280 px).
#: Tables may shrink below their words' width: cells wrap anywhere (headers first at their
#: underscores, <wbr>), commands wrap inside their code blocks, figures scale down.
_STYLE = """*{box-sizing:border-box}body{font-family:system-ui,sans-serif;margin:2em auto;
max-width:78em;padding:0 1em;color:#222;line-height:1.45}h1{margin-bottom:.2em}h2{border-bottom:
1px solid #ddd;padding-bottom:.2em;margin-top:2em}table{border-collapse:collapse;margin:.6em 0;
font-size:.86em;max-width:100%}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;
vertical-align:top;overflow-wrap:anywhere}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}figure{margin:1em 0}figure img{max-width:100%}
figcaption{font-size:.85em;color:#555}.muted{color:#666;font-size:.9em}.card{display:grid;
grid-template-columns:max-content minmax(0,1fr);gap:.2em 1em;font-size:.9em}
.card span{overflow-wrap:anywhere}.warn{color:#a40}
.writeup{background:#fafafa;border:1px solid #e4e4e4;padding:.4em 1.4em;overflow-wrap:anywhere}
.writeup pre,pre.cmd{white-space:pre-wrap;overflow-wrap:anywhere}code{font-size:.9em}
.synthetic{border:2px solid #a40;background:#fff4ec;padding:.5em 1em}"""


def _esc(value: object) -> str:
    shown = fmt_number(value)
    return html.escape(str(shown))


def _words(*parts: object) -> str:
    """The parts that are known, joined by spaces; ``n/a`` when none is."""
    known = [str(p) for p in parts if p not in (None, "", False)]
    return " ".join(known) or "n/a"


def _table(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    if not rows:
        return "<p class='muted'>none</p>"
    head = "".join(f"<th>{html.escape(c).replace('_', '_<wbr>')}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_esc(r.get(c))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _figure(fig_id: str, png: bytes | None, caption: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode()
    return (f"<figure id='fig-{fig_id}'><img alt='{html.escape(caption)}' "
            f"src='data:image/png;base64,{data}'><figcaption>{html.escape(caption)}"
            "</figcaption></figure>")


def _what_ran(view: RunView, ctx: Context) -> str:
    recipe = view.recipe
    rows = [{"variant": v.name or recipe.name, **{k: ctx["variants"][v.name].get(k)
                                                   for k in ("engine", "model",
                                                             "checkpoint_format",
                                                             "speculative", "startup_s")}}
            for v in view.variants]
    commands = "".join(
        f"<p class='muted'>{html.escape(v.name or recipe.name)}:</p><pre class='cmd'>"
        f"<code>{html.escape(v.launch.command)}</code></pre>"
        for v in view.variants if v.launch and v.launch.command)
    scen = [{"scenario": s.name, "endpoint": s.endpoint, "dataset": s.dataset,
             "input_len": s.input_len, "output_len": s.output_len,
             "concurrencies": ", ".join(map(str, s.concurrencies)),
             "num_prompts": str(s.num_prompts)} for s in recipe.scenarios]
    return ("<h2 id='what-ran'>What ran</h2>"
            + _table(rows, ["variant", "engine", "model", "checkpoint_format", "speculative",
                            "startup_s"])
            + (f"<h3>Commands</h3>{commands}" if commands else "")
            + _table(scen, ["scenario", "endpoint", "dataset", "input_len", "output_len",
                            "concurrencies", "num_prompts"]))


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


def _provenance(view: RunView) -> str:
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


def _plan_vs_measured(view: RunView) -> str:
    rows = []
    for v, scenario, conc, m in view.measurements():
        plan = v.plan.plan if v.plan else None
        floor = plan.decode_floor_ms if plan else None
        tpot = m.median_tpot_ms
        rows.append({"variant": v.label, "scenario": scenario, "concurrency": conc,
                     "weights_gib_per_gpu": plan.weights_gib_per_gpu if plan else None,
                     "planned_kv_tokens": plan.kv_cache_tokens if plan else None,
                     "decode_floor_ms": floor, "median_tpot_ms": tpot,
                     "energy_j_per_output_token": m.energy.energy_j_per_output_token
                     if m.energy else None,
                     "tpot_over_floor": tpot / floor if tpot and floor else None,
                     "kv_cache_usage_peak": m.server_metrics.kv_cache_usage_peak
                     if m.server_metrics else None,
                     "kv_cache_usage_expected": m.kv_usage_vs_plan.expected
                     if m.kv_usage_vs_plan else None})
    return ("<h2 id='plan'>The plan against what was measured</h2><p class='muted'>The "
            "decode floor is the TPOT the GPU's memory bandwidth allows one request (weights "
            "and KV read once per step): no engine beats it; tpot_over_floor says how far "
            "above it the run decoded; beside TPOT, the joules each output token took "
            "(idle draw included: see Energy). KV use is the engine's own peak (1.0: full), "
            "beside "
            "what the plan expects of the scenario (concurrency × tokens per request over the "
            "capacity the plan computed for the engine).</p>"
            + _table(rows, ["variant", "scenario", "concurrency", "weights_gib_per_gpu",
                            "planned_kv_tokens", "decode_floor_ms", "median_tpot_ms",
                            "energy_j_per_output_token", "tpot_over_floor", "kv_cache_usage_peak",
                            "kv_cache_usage_expected"]))


def _energy(view: RunView, power: bytes | None) -> str:
    return ("<h2 id='energy'>Energy</h2><p class='muted'>The devices the engine ran on, "
            "every one summed: GPUs through NVML's total-energy counter (exact between two "
            "reads; the window's edges interpolated, energy_j_bounds brackets them), CPU "
            "packages through RAPL. The window is the measurement's duration; the idle power "
            "was measured just before its requests, and energy_includes_idle says the "
            "per-token, per-request and mean figures include it (the above-idle figure "
            "leaves it out). The peak is the highest sampled power (every 100 ms). Notes say "
            "why a figure is missing or less exact than it looks.</p>"
            + _table(energy_rows(view), ENERGY_COLUMNS)
            + _figure("power", power, "Power over time, devices summed, at each variant's "
                      "highest concurrency: the idle window shaded, the measurement between "
                      "the dotted lines"))


def _plan_vs_engine(view: RunView) -> str:
    rows: list[dict[str, object]] = []
    skipped: list[str] = []
    for v in view.variants:
        if v.launch is None:
            continue
        vs = v.launch.plan_vs_engine
        if vs.skipped:
            skipped.append(f"{v.label}: {vs.skipped}")
        for r in vs.rows:
            rows.append({"variant": v.label, **r.model_dump(),
                         "flagged": f"yes: {r.advice}" if r.flagged else "no"})
    return ("<h2 id='plan-vs-engine'>The plan against the live engine</h2><p class='muted'>"
            "The memory plan, computed at launch for each engine's own settings (its model "
            "file, max_model_len, KV dtype, block size, budget), beside what the running engine "
            "reported: its log lines and its /metrics. A difference above 2 % is flagged.</p>"
            + _table(rows, ["variant", "figure", "unit", "plan", "engine", "diff_pct",
                            "flagged", "source"])
            + "".join(f"<p class='muted'>{html.escape(s)}</p>" for s in skipped))


def _checks_and_sdk(view: RunView) -> str:
    checks = [{"variant": v.label, "status": "ok" if c.ok else "not ok",
               **c.model_dump(exclude_unset=True)}
              for v in view.variants if v.launch for c in v.launch.checks]
    sdk = [{"variant": v.label, "scenario": sc, "concurrency": c,
            "wire_median_ttft_ms": m.median_ttft_ms,
            "wire_median_tpot_ms": m.median_tpot_ms, **m.sdk.model_dump()}
           for v, sc, c, m in view.measurements() if m.sdk]
    accuracy = [{"variant": v.label, "task": t, **r.model_dump(exclude_unset=True)}
                for v in view.variants for t, r in v.measured.accuracy.items()]
    few = [a for a in accuracy if a["task"] == "few_shot_gsm8k"]
    lm = [a for a in accuracy if a["task"] != "few_shot_gsm8k"]
    return ("<h2 id='checks'>Functional checks (openai SDK)</h2>"
            + "<p class='muted'>The chat asks a question whose answer the check knows; "
            "the answer column is what the model said.</p>"
            + _table(checks, ["variant", "name", "status", "answer", "seconds",
                              "content_chars", "reasoning_chars", "finish_reason", "note",
                              "error"])
            + "<h3>What an application sees</h3><p class='muted'>The same shape of requests "
            "(next seed) through the openai SDK's streaming client, beside the wire figures; "
            "the overheads are the client-side cost an application pays.</p>"
            + _table(sdk, ["variant", "scenario", "concurrency", "client",
                           "wire_median_ttft_ms", "median_ttft_ms", "ttft_overhead_ms",
                           "wire_median_tpot_ms", "median_tpot_ms", "tpot_overhead_ms",
                           "completed", "failed", "reconnects"])
            + "<h3>Accuracy (GSM8K)</h3>"
            + (_table(lm, ["variant", "task", "n", "num_fewshot", "strict_match",
                           "strict_match_stderr", "flexible_extract",
                           "flexible_extract_stderr", "caveat", "error"])
               if lm or not few else "")
            + (_table(few, ["variant", "task", "n", "num_shots", "max_tokens", "parallel",
                            "accuracy", "invalid", "latency_s", "output_throughput",
                            "endpoint", "caveat", "error"]) if few else ""))


def _sweeps(view: RunView) -> str:
    """The SLO searches the run folder keeps: a row each (the knee, what failed one step
    past it) and their curves; nothing when there is none."""
    png = sweep_png(view)
    if png is None:
        return ""
    from benchlib.sweep import sweep_row

    rows = [sweep_row(name, summary) for name, summary in view.sweeps]
    return ("<h3 id='sweeps'>SLO searches</h3><p class='muted'>The highest load whose "
            "latencies and goodput met every SLO (benchlib sweep): each probe a measurement "
            "kept beside the search's sweep.json.</p>"
            + _table(rows, ["sweep", "mode", "knee", "first_fail", "failed_by", "probes",
                            "slos", "goodput", "start_source"])
            + _figure("sweep", png, "SLO search: request throughput and goodput (left) and "
                      "each SLO's metric over its limit (right) along the load; dots passed, "
                      "crosses failed, the dashed line is the knee"))


def _synthetic_banner(view: RunView) -> str:
    """A warning at the top when any measurement was answered by the scripted server."""
    which = sorted({v.label for v, _, _, m in view.measurements() if m.synthetic}
                   | {v.label for v in view.variants if v.provenance.get("synthetic")})
    if not which:
        return ""
    return ("<p class='synthetic' id='synthetic'><b>Synthetic:</b> "
            + html.escape(", ".join(which)) + " measured benchlib's scripted server (canned "
            "timings, no engine). These figures test the kit; they measure no engine and do "
            "not compare with engine runs.</p>")


def render_html(view: RunView, ctx: Context, writeup_md: str, statuses: Mapping[str, str],
                power: bytes | None = None) -> str:
    """The whole page of the run ``view`` read (``ctx``: its write-up's names, listed in
    the appendix); ``power``: the power-over-time figure, where samples were kept."""
    recipe = view.recipe
    compare = view.compare
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    variants = compare.variants if compare else []
    refs = compare.references if compare else []
    spec_rows = [r.model_dump() for r in variants if r.speculative not in (None, "off")]
    caveats = [a.caveat for a in recipe.assumptions]
    caveats += sorted({c.strip() for r in variants for c in (r.caveats or "").split(";")
                       if c.strip()})
    for v in view.variants:
        mismatches = v.provenance.get("hardware_mismatches")
        caveats += [f"{v.label}: {m}" for m in
                    (mismatches if isinstance(mismatches, list) else [])]
    caveats += sorted({f"{r.reference}: {r.caveats}" for r in refs if r.caveats})
    caveats = list(dict.fromkeys(caveats))
    names = sorted(k for k in ctx if k != "compare")
    return "".join([
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(recipe.name)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(recipe.name)}</h1>",
        _synthetic_banner(view),
        f"<p class='muted'>{html.escape(recipe.description)}</p>",
        "<p class='muted'>steps: " + ", ".join(f"{html.escape(k)} {html.escape(v)}"
                                               for k, v in statuses.items()) + "</p>",
        "<h2 id='writeup'>Write-up</h2><div class='writeup'>", md.render(writeup_md),
        "</div>", _what_ran(view, ctx), _provenance(view), _checks_and_sdk(view),
        _plan_vs_engine(view), _plan_vs_measured(view), _energy(view, power),
        "<h2 id='figures'>Figures</h2>",
        _figure("pareto", pareto_png(view), "Per-user against total output tokens/s along "
                "concurrency: the Pareto view (up and right is better)"),
        _figure("spread", spread_png(view), "TTFT and TPOT per concurrency: median (line) "
                "and p99 (dashed), the band between them shaded"),
        _sweeps(view),
        "<h2 id='speculative'>Speculative decoding</h2>",
        _table(spec_rows, ["variant", "scenario", "concurrency", "speculative",
                           "mean_tokens_per_chunk", "server_acceptance_rate",
                           "server_mean_acceptance_length", "spec_reconciled", "speedup",
                           "speedup_over", "speedup_low", "speedup_high", "speedup_verdict"]),
        interval_sections(view),
        "<h2 id='references'>Published references</h2>",
        _table([r.model_dump() for r in refs],
               ["reference", "variant", "scenario", "concurrency", "metric",
                "unit", "published", "measured", "measured_over_published", "engine",
                "checkpoint", "caveats"]),
        "<h2 id='caveats'>Caveats</h2>",
        "<ul>" + "".join(f"<li>{html.escape(c)}</li>" for c in caveats) + "</ul>"
        if caveats else "<p class='muted'>none known to the kit</p>",
        "<h3>Provenance differences between the variants</h3>",
        "<ul>" + "".join(f"<li>{html.escape(str(d))}</li>" for d in
                         (compare.provenance_differences if compare else [])) + "</ul>",
        "<h2 id='names'>Appendix: names a write-up can cite</h2><p class='muted'>",
        html.escape(", ".join(names)), " — e.g. <code>{{ variants.NAME.SCENARIO.c1.tok_s "
        "}}</code>, <code>{{ plan.NAME.decode_floor_ms }}</code>, <code>{{ "
        "references.NAME.per_user_tok_s }}</code></p>",
        "</body></html>\n"])
