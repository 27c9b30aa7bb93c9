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

Each measurement's figures are its result keys (``median_ttft_ms``, ``output_throughput``,
``p99_tpot_ms`` …) with three short aliases a sentence reads well with: ``tok_s``
(``per_user_tok_s``), ``ttft_ms`` (``median_ttft_ms``) and ``tpot_ms`` (``median_tpot_ms``),
and its energy figures at the top as well (``energy_j_per_output_token``, ``avg_power_w``,
``idle_power_w`` …: :data:`~benchlib.pipeline.steps._summary.ENERGY_FIGURES`; null where
there was none, the whole block with its reason under ``energy``). Names with ``-`` also
appear with ``_`` (``vllm-ngram`` → ``vllm_ngram``), so a template can write
``variants.vllm_ngram.chat.c1.tok_s``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchlib.pipeline._folder import RunFolder
from benchlib.pipeline._results import read_results
from benchlib.pipeline.steps._summary import measurements
from benchlib.report._takeaway import takeaway
from benchlib.sweep import run_sweeps

__all__ = ["ALIASES", "report_context", "variant_names"]

#: short names → the result key they stand for
ALIASES = {"tok_s": "per_user_tok_s", "ttft_ms": "median_ttft_ms", "tpot_ms": "median_tpot_ms"}


def _with_underscores(mapping: dict[str, Any]) -> dict[str, Any]:
    out = dict(mapping)
    for key, value in mapping.items():
        out.setdefault(key.replace("-", "_").replace(".", "_"), value)
    return out


def _sidecar(folder: RunFolder, step: str) -> dict[str, Any]:
    path = folder.sidecar(step)
    if not path.is_file():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def variant_names(run: RunFolder, recipe: dict[str, Any]) -> list[str]:
    """The run's variants in the recipe's order; ``[""]`` for a recipe without."""
    return [v["name"] for v in recipe.get("variants") or []] or [""]


def _by_scenario(measured: dict[str, Any]) -> dict[str, Any]:
    """scenario → c<N> → the measurement's figures, with the aliases."""
    by_scenario: dict[str, dict[str, Any]] = {}
    for scenario, concurrency, result in measurements(measured):
        for alias, key in ALIASES.items():
            result[alias] = result.get(key)
        by_scenario.setdefault(scenario, {})[f"c{concurrency}"] = result
    return by_scenario


def report_context(run_dir: str | Path) -> dict[str, Any]:
    """Everything the run folder at ``run_dir`` holds, under the names above."""
    run = RunFolder(path=Path(run_dir))
    recipe: dict[str, Any] = json.loads(run.recipe_json.read_text(encoding="utf-8")) \
        if run.recipe_json.is_file() else {}
    names = variant_names(run, recipe)
    variants: dict[str, Any] = {}
    plans: dict[str, Any] = {}
    provenance: dict[str, Any] = {}
    accuracy: dict[str, Any] = {}
    for name in names:
        folder = run.variant(name)
        launch = read_results(folder.results("02_launch"))
        measured = read_results(folder.results("03_measure"))
        sub = json.loads(folder.recipe_json.read_text(encoding="utf-8")) \
            if name and folder.recipe_json.is_file() else recipe
        engine = sub.get("engine") or {}
        spec = engine.get("speculative") or {}
        variants[name] = _with_underscores({
            "engine": f"{engine.get('kind', '')} {engine.get('version') or ''}".strip(),
            "speculative": spec.get("method", "off") + (f" k={spec['k']}"
                                                        if spec.get("k") else ""),
            "model": (sub.get("model") or {}).get("id"),
            "checkpoint_format": (sub.get("model") or {}).get("format"),
            "startup_s": launch.get("startup_s"),
            "log_facts": launch.get("log_facts") or {},
            "plan_vs_engine": {r["figure"]: r for r in
                               (launch.get("plan_vs_engine") or {}).get("rows") or []},
            **_by_scenario(measured)})
        plans[name] = read_results(folder.results("00_plan")).get("plan") or {}
        accuracy[name] = {k.split("/", 1)[1]: v for k, v in measured.items()
                          if k.startswith("accuracy/")}
        provenance[name] = (_sidecar(folder, "03_measure").get("provenance")
                            or _sidecar(folder, "02_launch").get("provenance") or {})
    compare = read_results(run.results("04_compare"))
    references: dict[str, Any] = {}
    for row in compare.get("references") or []:
        ref = references.setdefault(row["reference"], {
            k: row.get(k) for k in ("variant", "scenario", "concurrency", "engine",
                                    "checkpoint", "hardware", "source", "published_on",
                                    "measured_as", "caveats")})
        ref[row["metric"]] = row.get("published")
    ctx = {"recipe": recipe, "variants": _with_underscores(variants),
           "run": variants[names[0]] if names == [""] else {},
           "plan": _with_underscores(plans), "provenance": _with_underscores(provenance),
           "references": _with_underscores(references), "compare": compare,
           "accuracy": _with_underscores(accuracy),
           "sweeps": _with_underscores({name or "run": s.model_dump(mode="json")
                                        for name, s in run_sweeps(run.path)})}
    ctx["takeaway"] = takeaway(ctx).model_dump(mode="json")
    return ctx
