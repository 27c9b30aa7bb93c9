"""The report page: one self-contained HTML file (no scripts, no network: styles inline,
figures as data: URIs) that a browser opens offline.

The answer first (issue 40: :mod:`benchlib.report._first_screen`): the headline table
(variants × scenarios), the figure (per-user against total throughput, every variant) and at
most five sentences of takeaway, inside a laptop's first screen. Then the details, each
folded under its heading with an anchor (``#per-scenario``, ``#plan-vs-engine`` …, linked
from the line above them): the takeaway per scenario (the races, speculation's acceptance,
its reconciliation with the client's count, what drafting cost); the speculative table
(each speedup with its 95 % interval); what speculation costs per engine step and the
acceptance at which it pays (``#spec-cost``); the write-up (writeup.md); what ran (variants,
scenarios, the commands); the plan against the live engine (weights, KV budget, KV tokens
and blocks as the engine reported them at launch, a difference above 2 % flagged); the plan
against what was measured (TPOT against the decode floor, joules per output token beside
it, peak KV use against the plan's expectation); energy (joules, watts, idle draw, power
over time); more figures (TTFT and TPOT spread per concurrency, the SLO searches' curves
with their knees when the run folder keeps any); the headline figures with their
intervals, each variant's over the baseline's with a verdict, TTFT from the schedule and a
conversations run's per-turn view (each only when the run has one:
:mod:`benchlib.report._intervals`); the functional checks and what an application sees
(openai SDK); published references; the steps' statuses; the provenance card; caveats and
every provenance difference; and an appendix of the names a write-up can cite.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping

from markdown_it import MarkdownIt

from benchlib.report._context import Context
from benchlib.report._energy import ENERGY_COLUMNS, energy_rows
from benchlib.report._figures import pareto_png, spread_png, sweep_png
from benchlib.report._first_screen import contents, first_screen
from benchlib.report._intervals import interval_sections
from benchlib.report._markup import figure, fold, table
from benchlib.report._provenance import provenance_card
from benchlib.report._spec_cost import spec_cost_section
from benchlib.report._view import RunView
from benchlib.runs import planned_capacity
from benchlib.runs._glance import FIGURE_FILE, Glance

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
.writeup img{max-width:100%}
.writeup pre,pre.cmd{white-space:pre-wrap;overflow-wrap:anywhere}code{font-size:.9em}
.synthetic{border:2px solid #a40;background:#fff4ec;padding:.5em 1em}
details{border-bottom:1px solid #ddd;margin:.3em 0}summary{cursor:pointer;padding:.3em 0}
summary h2{display:inline;border:0;margin:0;font-size:1.25em}details[open]{padding-bottom:1em}
#headline{font-size:.9em}#headline th.group{text-align:center}
#headline th{overflow-wrap:normal}#headline td{white-space:nowrap;overflow-wrap:normal}
#headline td:first-child{white-space:normal}
#headline td:first-child{min-width:11em}#headline .conc{font-weight:normal;font-size:.85em}
.legend{margin-top:0;font-size:.8em}.nowrap{white-space:nowrap}
#at-a-glance figure{margin:.4em 0}#takeaway{margin:.4em 0}#contents{margin:1em 0}
#spec-cost-table td{white-space:nowrap;overflow-wrap:normal}
#spec-cost-table td:first-child,#spec-cost-table td:last-child{white-space:normal}"""


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
            + table(rows, ["variant", "engine", "model", "checkpoint_format", "speculative",
                            "startup_s"])
            + (f"<h3>Commands</h3>{commands}" if commands else "")
            + table(scen, ["scenario", "endpoint", "dataset", "input_len", "output_len",
                            "concurrencies", "num_prompts"]))


def _plan_vs_measured(view: RunView) -> str:
    rows = []
    for v, scenario, conc, m in view.measurements():
        plan = v.plan.plan if v.plan else None
        floor = plan.decode_floor_ms if plan else None
        tpot = m.median_tpot_ms
        kv, _ = planned_capacity(v.plan, v.launch, v.recipe)
        rows.append({"variant": v.label, "scenario": scenario, "concurrency": conc,
                     "weights_gib_per_gpu": plan.weights_gib_per_gpu if plan else None,
                     "planned_kv_tokens": kv,
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
            + table(rows, ["variant", "scenario", "concurrency", "weights_gib_per_gpu",
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
            + table(energy_rows(view), ENERGY_COLUMNS)
            + figure("power", power, "Power over time, devices summed, at each variant's "
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
            + table(rows, ["variant", "figure", "unit", "plan", "engine", "diff_pct",
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
            + table(checks, ["variant", "name", "status", "answer", "seconds",
                              "content_chars", "reasoning_chars", "finish_reason", "note",
                              "error"])
            + "<h3>What an application sees</h3><p class='muted'>The same shape of requests "
            "(next seed) through the openai SDK's streaming client, beside the wire figures; "
            "the overheads are the client-side cost an application pays.</p>"
            + table(sdk, ["variant", "scenario", "concurrency", "client",
                           "wire_median_ttft_ms", "median_ttft_ms", "ttft_overhead_ms",
                           "wire_median_tpot_ms", "median_tpot_ms", "tpot_overhead_ms",
                           "completed", "failed", "reconnects"])
            + "<h3>Accuracy (GSM8K)</h3>"
            + (table(lm, ["variant", "task", "n", "num_fewshot", "strict_match",
                           "strict_match_stderr", "flexible_extract",
                           "flexible_extract_stderr", "caveat", "error"])
               if lm or not few else "")
            + (table(few, ["variant", "task", "n", "num_shots", "max_tokens", "parallel",
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
            + table(rows, ["sweep", "mode", "knee", "first_fail", "failed_by", "probes",
                            "slos", "goodput", "start_source"])
            + figure("sweep", png, "SLO search: request throughput and goodput (left) and "
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


def _per_scenario(ctx: Context) -> str:
    """The takeaway in full: each scenario's race, each speculating variant's acceptance,
    its reconciliation with the client's count and what drafting cost."""
    lines = ctx["takeaway"]["lines"]
    return ("<h2 id='per-scenario'>Per scenario: the races, speculation's acceptance, "
            "reconciliation and cost</h2>"
            + ("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in lines) + "</ul>"
               if lines else "<p class='muted'>no comparison of variants</p>"))


def _caveats(view: RunView) -> str:
    """Every caveat the kit knows (the recipe's assumptions, the comparison's rows, the
    machines, the references) and every provenance difference between the variants."""
    compare = view.compare
    variants = compare.variants if compare else []
    refs = compare.references if compare else []
    caveats = [a.caveat for a in view.recipe.assumptions]
    caveats += sorted({c.strip() for r in variants for c in (r.caveats or "").split(";")
                       if c.strip()})
    for v in view.variants:
        mismatches = v.provenance.get("hardware_mismatches")
        caveats += [f"{v.label}: {m}" for m in
                    (mismatches if isinstance(mismatches, list) else [])]
    caveats += sorted({f"{r.reference}: {r.caveats}" for r in refs if r.caveats})
    caveats = list(dict.fromkeys(caveats))
    return ("<h2 id='caveats'>Caveats</h2>"
            + ("<ul>" + "".join(f"<li>{html.escape(c)}</li>" for c in caveats) + "</ul>"
               if caveats else "<p class='muted'>none known to the kit</p>")
            + "<h3>Provenance differences between the variants</h3><ul>"
            + "".join(f"<li>{html.escape(str(d))}</li>" for d in
                      (compare.provenance_differences if compare else [])) + "</ul>")


def _inline(writeup: str, pareto: bytes | None) -> str:
    """The write-up's HTML with its figure (``variants.png``, as writeup.md shows it) drawn
    inline, so the page stays one file that reads anywhere."""
    if pareto is None:
        return writeup
    data = base64.b64encode(pareto).decode()
    return writeup.replace(f'src="{FIGURE_FILE}"', f'src="data:image/png;base64,{data}"')


def render_html(view: RunView, ctx: Context, writeup_md: str, statuses: Mapping[str, str],
                power: bytes | None = None) -> str:
    """The whole page of the run ``view`` read (``ctx``: its write-up's names, listed in
    the appendix); ``power``: the power-over-time figure, where samples were kept."""
    recipe = view.recipe
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    variants = view.compare.variants if view.compare else []
    refs = view.compare.references if view.compare else []
    spec_rows = [r.model_dump() for r in variants if r.speculative not in (None, "off")]
    names = sorted(k for k in ctx if k != "compare")
    pareto = pareto_png(view)
    details = fold("".join([
        _per_scenario(ctx),
        "<h2 id='speculative'>Speculative decoding</h2>",
        table(spec_rows, ["variant", "scenario", "concurrency", "speculative",
                          "mean_tokens_per_chunk", "server_acceptance_rate",
                          "server_mean_acceptance_length", "spec_reconciled", "speedup",
                          "speedup_over", "speedup_low", "speedup_high", "speedup_verdict"]),
        spec_cost_section(view),
        "<h2 id='writeup'>Write-up (writeup.md)</h2><div class='writeup'>",
        _inline(md.render(writeup_md), pareto), "</div>",
        _what_ran(view, ctx), _plan_vs_engine(view), _plan_vs_measured(view),
        _energy(view, power),
        "<h2 id='figures'>More figures</h2>",
        figure("spread", spread_png(view), "TTFT and TPOT per concurrency: median (line) "
               "and p99 (dashed), the band between them shaded"),
        _sweeps(view), interval_sections(view), _checks_and_sdk(view),
        "<h2 id='references'>Published references</h2>",
        table([r.model_dump() for r in refs],
              ["reference", "variant", "scenario", "concurrency", "metric",
               "unit", "published", "measured", "measured_over_published", "engine",
               "checkpoint", "caveats"]),
        "<h2 id='steps'>Steps</h2><p>" + (", ".join(
            f"{html.escape(k)} {html.escape(v)}" for k, v in statuses.items())
            or "none recorded") + "</p>",
        provenance_card(view), _caveats(view),
        "<h2 id='names'>Appendix: names a write-up can cite</h2><p class='muted'>",
        html.escape(", ".join(names)), " — e.g. <code>{{ variants.NAME.SCENARIO.c1.tok_s "
        "}}</code>, <code>{{ plan.NAME.decode_floor_ms }}</code>, <code>{{ "
        "references.NAME.per_user_tok_s }}</code>, <code>{{ glance.table }}</code></p>"]))
    return "".join([
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(recipe.name)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(recipe.name)}</h1>",
        _synthetic_banner(view),
        f"<p class='muted'>{html.escape(recipe.description)}</p>",
        first_screen(Glance.model_validate(ctx["glance"]), pareto),
        contents(details), details, "</body></html>\n"])
