"""What the seed recipes' tests hold alike: every ``kind: differs`` assumption is on each row
of the references table it shapes (a departure from the seed named where the figure is)."""

from __future__ import annotations

import pandas as pd

from benchlib.pipeline.steps._references import references_table
from benchlib.recipe import Assumption, Recipe

__all__ = ["differs_on_every_row"]


def differs_on_every_row(recipe: Recipe) -> tuple[list[Assumption], pd.DataFrame]:
    """Assert each ``differs`` assumption's caveat is on every reference row it applies to;
    the assumptions and the (non-empty) table, for the caller's own checks."""
    differs = [a for a in recipe.assumptions if a.kind == "differs"]
    table = references_table(recipe, "")
    assert table is not None and not table.empty
    for _, row in table.iterrows():
        for a in differs:
            if a.applies(str(row["variant"]), str(row["scenario"])):
                assert a.caveat in row["caveats"]
    return differs, table
