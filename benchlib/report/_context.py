"""A run folder read into one nested mapping: the names a write-up cites and the report shows.

::

    recipe        the validated recipe (recipe.json)
    variants      name → {engine, speculative, startup_s, log_facts,
                  plan_vs_engine → {<figure> → {plan, engine, diff_pct, flagged, source …}},
                  <scenario> → {c<N> → figures}}
    run           the same as variants' only entry, for a recipe without variants
    plan          name → 00_plan's numbers (weights, KV capacity, decode floor …)
    references    name → a published result's figures and fields
    compare       04_compare's results (variants side by side, provenance differences)
    provenance    name → the measure step's provenance (hardware, engine, model, kit)
    sweeps        name → an SLO search kept in the run folder (RUN/sweep/NAME/sweep.json:
                  knee, first_fail, probes …; empty for most runs)
    takeaway      a comparison's takeaway from its own numbers (report._takeaway): races
                  (engine against engine, per user and in total), speculation (each
                  speculating variant's speedup, verdict, draft and accepted counts and their
                  reconciliation with the client's) and lines (the same as sentences)
    glance        the run at a glance (report._glance): the headline table, variants ×
                  scenarios (scenarios, variants → cells; as Markdown: table), its figure's
                  file (figure: variants.png, where kept) and ≤ 5 sentences (lines)

Each measurement's figures are its result keys (``median_ttft_ms``, ``output_throughput``,
``p99_tpot_ms`` …) with three short aliases a sentence reads well with: ``tok_s``
(``per_user_tok_s``), ``ttft_ms`` (``median_ttft_ms``) and ``tpot_ms`` (``median_tpot_ms``),
and its energy figures at the top as well (``energy_j_per_output_token``, ``avg_power_w``,
``idle_power_w`` …: :data:`~benchlib.runs.ENERGY_FIGURES`; null where
there was none, the whole block with its reason under ``energy``). Names with ``-`` also
appear with ``_`` (``vllm-ngram`` → ``vllm_ngram``), so a template can write
``variants.vllm_ngram.chat.c1.tok_s``.

The names come from the steps' result models (:mod:`benchlib.runs`), read typed
(:func:`~benchlib.report._view.read_run`): a field renamed there fails mypy here. The
context itself is template data — Jinja looks names up at render time — so it is typed
once, as :data:`Context`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from benchlib.report._takeaway import takeaway
from benchlib.report._view import RunView, VariantView, read_run
from benchlib.runs import CompareResult, Measurement, MeasureStep, figures, measurements
from benchlib.runs._glance import FIGURE_FILE, glance

__all__ = ["ALIASES", "VARIANT_FACTS", "Context", "context_of", "report_context",
           "variant_names"]

#: the write-up's names: template data that Jinja reads by name at render time (a JSON
#: boundary: what a name holds is the results' JSON), built from the typed results
Context = dict[str, Any]

#: what the write-up can cite of each variant beside its scenarios (:func:`_variant`)
VARIANT_FACTS = ("engine", "speculative", "model", "checkpoint_format", "startup_s",
                 "log_facts", "plan_vs_engine")

#: short names → the result key they stand for
ALIASES = {"tok_s": "per_user_tok_s", "ttft_ms": "median_ttft_ms", "tpot_ms": "median_tpot_ms"}


def _aliases(m: Measurement) -> dict[str, float | None]:
    """:data:`ALIASES`' values of a measurement."""
    return {"tok_s": m.per_user_tok_s, "ttft_ms": m.median_ttft_ms,
            "tpot_ms": m.median_tpot_ms}


def _with_underscores(mapping: Mapping[str, object]) -> dict[str, object]:
    out = dict(mapping)
    for key, value in mapping.items():
        out.setdefault(key.replace("-", "_").replace(".", "_"), value)
    return out


def variant_names(view: RunView) -> list[str]:
    """The run's variants in the recipe's order; ``[""]`` for a recipe without."""
    return [v.name for v in view.variants]


def _by_scenario(measured: MeasureStep) -> dict[str, dict[str, dict[str, JsonValue]]]:
    """scenario → c<N> → the measurement's figures, with the aliases."""
    by_scenario: dict[str, dict[str, dict[str, JsonValue]]] = {}
    for scenario, concurrency, m in measurements(measured):
        by_scenario.setdefault(scenario, {})[f"c{concurrency}"] = {**figures(m),
                                                                   **_aliases(m)}
    return by_scenario


def _variant(v: VariantView) -> dict[str, object]:
    """A variant's names: what ran, how it launched, its measurements."""
    engine, launch = v.recipe.engine, v.launch
    spec = engine.speculative
    facts: dict[str, object] = {
        "engine": f"{engine.kind} {engine.version or ''}".strip(),
        "speculative": spec.method + (f" k={spec.k}" if spec.k else ""),
        "model": v.recipe.model.id, "checkpoint_format": v.recipe.model.format,
        "startup_s": launch.startup_s if launch else None,
        "log_facts": launch.log_facts if launch else {},
        "plan_vs_engine": {r.figure: r.model_dump(mode="json", exclude_unset=True)
                           for r in launch.plan_vs_engine.rows} if launch else {}}
    assert tuple(facts) == VARIANT_FACTS, "name a new fact in VARIANT_FACTS (the shape reads it)"
    return _with_underscores({**facts, **_by_scenario(v.measured)})


def _references(compare: CompareResult | None) -> dict[str, object]:
    """reference → its facts and its published figures (metric → value)."""
    references: dict[str, dict[str, object]] = {}
    for row in compare.references if compare else []:
        ref = references.setdefault(row.reference, {k: getattr(row, k) for k in row.FACTS})
        ref[row.metric] = row.published
    return dict(references)


#: what a glance row takes from 04_compare's (the rest from the measurement itself)
_SPEEDUP_KEYS = ("speedup", "speedup_over", "speedup_low", "speedup_high", "speedup_verdict")


def rows_of(view: RunView) -> list[dict[str, JsonValue]]:
    """The run's variant rows: one per measurement, with 04_compare's speedup, its baseline
    and interval where it compared (the speedup takes 04_compare's baseline)."""
    compared: dict[tuple[str, str | None, int | None], dict[str, JsonValue]] = {
        (r.variant, r.scenario, r.concurrency): r.model_dump(mode="json")
        for r in (view.compare.variants if view.compare else [])}
    return [{**{k: compared.get((v.name, scenario, conc), {}).get(k) for k in _SPEEDUP_KEYS},
             "variant": v.label, "speculative": v.recipe.engine.speculative.label,
             "engine": f"{v.recipe.engine.kind} {v.recipe.engine.version or ''}".strip(),
             "scenario": scenario, "concurrency": conc, "per_user_tok_s": m.per_user_tok_s,
             "output_throughput": m.output_throughput, "median_ttft_ms": m.median_ttft_ms}
            for v, scenario, conc, m in view.measurements()]


def context_of(view: RunView) -> Context:
    """The write-up's names for the run ``view`` read."""
    variants = {v.name: _variant(v) for v in view.variants}
    compare = view.compare
    ctx: Context = {
        "recipe": view.recipe_json, "variants": _with_underscores(dict(variants)),
        "run": variants.get("", {}),
        "plan": _with_underscores({v.name: v.plan.plan.model_dump(mode="json",
                                                                  exclude_unset=True)
                                   if v.plan and v.plan.plan else {}
                                   for v in view.variants}),
        "provenance": _with_underscores({v.name: v.provenance for v in view.variants}),
        "references": _with_underscores(_references(compare)),
        "compare": compare.model_dump(mode="json", exclude_unset=True) if compare else {},
        "accuracy": _with_underscores({
            v.name: {task: a.model_dump(mode="json", exclude_unset=True)
                     for task, a in v.measured.accuracy.items()} for v in view.variants}),
        "sweeps": _with_underscores({name or "run": s.model_dump(mode="json")
                                     for name, s in view.sweeps})}
    ctx["takeaway"] = takeaway(ctx).model_dump(mode="json")
    at_a_glance = glance(rows_of(view), ctx["takeaway"]["races"],
                         compare.spec_cost if compare else ())
    if (view.folder.path / FIGURE_FILE).is_file():
        at_a_glance.figure = FIGURE_FILE
    ctx["glance"] = at_a_glance.model_dump(mode="json")
    return ctx


def report_context(run_dir: str | Path) -> Context:
    """Everything the run folder at ``run_dir`` holds, under the names above."""
    return context_of(read_run(run_dir))
