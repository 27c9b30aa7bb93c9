"""benchlib's layers, bottom to top: the architecture as one table, held by a test.

Rule: a module may import modules of its own package and of packages in *lower* layers only,
at module level, inside functions and under ``if TYPE_CHECKING:`` alike
(``tests/unit/test_imports.py`` reads every import of every module and fails on an upward
or sideways one, naming the line). The root package ``benchlib`` (its ``__init__`` re-exports
the exceptions) is the namespace and stands outside the table.

====  ======================================  ===============================================
layer packages                                what they are
====  ======================================  ===============================================
0     _exceptions, _wire, _tls, _layers       errors with exit codes; HTTP/SSE wire helpers;
                                              TLS contexts; this table
1     _secrets                                secrets from the environment, scrubbed from
                                              every byte written
2     measure, memory, models, importers,     the measuring client; GPU memory math; model
      energy                                  files; published-result parsers; NVML/RAPL
3     adapters                                one adapter per engine kind: everything the
                                              kit knows about an engine; the kinds' registry
4     recipe, scripted, sweep                 the recipe schema; the scripted server (a
                                              measuring instrument); SLO search
5     engines, accuracy, checks, provenance,  engine launch, flags and logs; lm-eval; the
      references                              functional checks; provenance; references
6     runs                                    the run folder, result I/O, the steps' names and
                                              typed results, the summary table
7     pipeline                                the steps, their notebooks and the runner
8     report                                  HTML report and write-up from run folders
9     cli                                     the command line
10    __main__                                ``python -m benchlib``
====  ======================================  ===============================================
"""

from __future__ import annotations

__all__ = ["LAYERS", "layer_of"]

#: bottom to top; each package (or top-level module) in exactly one layer
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_exceptions", "_wire", "_tls", "_layers"),
    ("_secrets",),
    ("measure", "memory", "models", "importers", "energy"),
    ("adapters",),
    ("recipe", "scripted", "sweep"),
    ("engines", "accuracy", "checks", "provenance", "references"),
    ("runs",),
    ("pipeline",),
    ("report",),
    ("cli",),
    ("__main__",),
)

_INDEX = {name: i for i, layer in enumerate(LAYERS) for name in layer}
assert len(_INDEX) == sum(map(len, LAYERS)), "a package is in two layers"


def layer_of(module: str) -> int | None:
    """The layer of ``benchlib.X…`` (``X``'s), or None for the root package and names
    outside benchlib."""
    parts = module.split(".")
    if parts[0] != "benchlib" or len(parts) < 2:
        return None
    return _INDEX.get(parts[1])
