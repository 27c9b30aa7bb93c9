"""Published results kept as reference figures (:class:`Reference`), and set beside a run's
measurements (:func:`reference_table`) by ``04_compare``: seed write-ups' tables and printed
benchmark blocks, each with its source, hardware, engine, checkpoint and caveats."""

from benchlib.references._model import (
    REFERENCE_METRICS,
    ImportedFrom,
    Reference,
    load_references,
    recipe_references,
    unit_of,
)
from benchlib.references._table import REFERENCE_COLUMNS, MeasuredKey, reference_table

__all__ = ["REFERENCE_COLUMNS", "REFERENCE_METRICS", "ImportedFrom", "MeasuredKey", "Reference",
           "load_references", "recipe_references", "reference_table", "unit_of"]
