"""References beside measurements: one row per published figure, the run's figure of the same
key at the same scenario, concurrency and variant next to it, and their ratio."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from benchlib.references._model import Reference, unit_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["REFERENCE_COLUMNS", "MeasuredKey", "reference_table"]

REFERENCE_COLUMNS = ["reference", "variant", "scenario", "concurrency", "metric", "unit",
                     "published", "measured", "measured_over_published", "engine", "checkpoint",
                     "hardware", "source", "published_on", "measured_as", "caveats"]
#: (variant, scenario, concurrency) of a measurement; variant "" in a run without variants;
#: scenario "" and concurrency 0: the variant's run-wide figures (accuracy)
MeasuredKey = tuple[str, str, int]


def _match(ref: Reference, measured: Mapping[MeasuredKey, Mapping[str, float | None]]
           ) -> Mapping[str, float | None]:
    """The run's figures the reference stands beside: its variant (any, in a run without
    variants), scenario and concurrency (a reference without a scenario: the variant's
    run-wide figures, key ``(variant, "", 0)``: accuracy); empty when the run has none."""
    for (variant, scenario, conc), figures in measured.items():
        if (scenario == (ref.scenario or "") and conc == (ref.concurrency or
                                                           (1 if ref.scenario else 0))
                and (not variant or ref.variant is None or variant == ref.variant)):
            return figures
    return {}


def reference_table(refs: Sequence[tuple[Reference, Mapping[str, float]]],
                    measured: Mapping[MeasuredKey, Mapping[str, float | None]]
                    ) -> pd.DataFrame:
    """One row per figure of each reference, with the run's own figure of that key (None
    where the run has not measured it) and measured / published."""
    import pandas as pd

    rows = []
    for ref, figures in refs:
        mine = _match(ref, measured)
        for metric, value in figures.items():
            got = mine.get(metric)
            rows.append({
                "reference": ref.name, "variant": ref.variant, "scenario": ref.scenario,
                "concurrency": ref.concurrency, "metric": metric, "unit": unit_of(metric),
                "published": value,
                "measured": got,
                "measured_over_published": got / value if got is not None and value else None,
                "engine": ref.engine, "checkpoint": ref.checkpoint, "hardware": ref.hardware,
                "source": ref.source, "published_on": ref.published,
                "measured_as": ref.measured_as, "caveats": "; ".join(ref.caveats)})
    return pd.DataFrame(rows, columns=REFERENCE_COLUMNS)
