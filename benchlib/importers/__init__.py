"""Reading published benchmark results into ``vllm bench serve``'s keys: ``benchlib import``.

One call, :func:`import_results`, reads a file whatever its format (told apart by content):
``vllm bench serve`` console blocks of every layout and its result JSON / JSON Lines,
``python -m sglang.bench_serving`` console blocks and JSON Lines, GuideLLM's
``benchmarks.json``, AIPerf's ``profile_export_aiperf.json`` and the seed 000 write-up's
script block. Each result is an :class:`ImportedResult`: the keys of
:class:`~benchlib.measure.MeasureResult`, the source named (``source_format``,
``source_version``, ``source_file``), what only that tool reports in ``extra``, and ``None``
wherever the source says nothing. How each format maps, and where a tool's metric differs
from vLLM's, is in its module's docstring (``_vllm``, ``_sglang``, ``_guidellm``, ``_aiperf``,
``_seed``).
"""

from benchlib.importers._detect import EXPECTED, import_results, parse_results
from benchlib.importers._model import STAT_METRICS, ImportedResult, SourceFormat

__all__ = ["EXPECTED", "STAT_METRICS", "ImportedResult", "SourceFormat", "import_results",
           "parse_results"]
