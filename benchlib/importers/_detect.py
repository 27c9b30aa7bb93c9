"""Telling the formats apart by content (never by file name) and reading a file into results.

A file whose text starts with ``{`` or ``[`` is read as JSON: one document, or JSON Lines
(``--append-result``, SGLang's ``--output-file``); each object is then recognised by its keys
(GuideLLM's ``benchmarks[].metrics``, AIPerf's ``unit`` blocks or ``aiperf_version``, SGLang's
``*_e2e_latency_ms``, vLLM's ``completed`` + ``duration``). Anything else is read as a console
log: every ``Serving Benchmark Result`` block (SGLang's when it has SGLang's own labels, such
as ``Backend:``) and every seed 000 block, in file order, so a sweep's log gives one result per
run. (A log whose first line starts with ``[`` is tried as JSON first, then as a log.)

A file that matches no format, or a result that cannot be read, is a
:class:`~benchlib.UsageError` (exit code 2) naming the file, the place and what was expected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import benchlib.importers._aiperf as _aiperf
import benchlib.importers._guidellm as _guidellm
import benchlib.importers._sglang as _sglang
import benchlib.importers._vllm as _vllm
from benchlib._exceptions import UsageError, validation_message
from benchlib.importers._common import Malformed, Values, clean
from benchlib.importers._console import serving_blocks
from benchlib.importers._model import ImportedResult
from benchlib.importers._seed import seed_results

__all__ = ["EXPECTED", "import_results", "parse_results"]

EXPECTED = ("a 'vllm bench serve' or 'python -m sglang.bench_serving' console block "
            "('============ Serving Benchmark Result ============'), the seed 000 script's "
            "block ('=== <model> vLLM 성능 측정 결과 ==='), or a JSON result: 'vllm bench serve "
            "--save-result' (JSON or JSON Lines), SGLang bench_serving '--output-file' (JSON "
            "Lines), GuideLLM's benchmarks.json or AIPerf's profile_export_aiperf.json")


def import_results(path: str | Path) -> list[ImportedResult]:
    """Every benchmark result in the file at ``path``, in file order, whatever its format."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(name, f"cannot read the file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(name, f"not UTF-8 text; expected {EXPECTED}") from None
    return parse_results(text, name)


def parse_results(text: str, source: str) -> list[ImportedResult]:
    """Every benchmark result in ``text`` (the content of the file named ``source``)."""
    try:
        found = _values(text)
    except Malformed as exc:
        raise UsageError(source, str(exc)) from None
    if not found:
        raise UsageError(source, f"no benchmark result found; expected {EXPECTED}")
    return [_build(values, source, i) for i, values in enumerate(found)]


def _build(values: Values, source: str, index: int) -> ImportedResult:
    values = {**values, "source_file": source, "source_index": index,
              "extra": clean(values.get("extra", {}))}
    try:
        return ImportedResult.model_validate(values)
    except ValidationError as exc:
        raise UsageError(source, f"result {index}: {validation_message(exc)}") from None


def _values(text: str) -> list[Values]:
    if not text.lstrip().startswith(("{", "[")):
        return _console(text)
    try:
        return _json(text)
    except Malformed:
        found = _console(text)  # a log whose lines start with "[" (a timestamp, a tag)
        if found:
            return found
        raise


def _console(text: str) -> list[Values]:
    lines = text.splitlines()
    found: list[tuple[int, Values]] = []
    for block in serving_blocks(lines):
        reader = _sglang if _sglang.is_sglang_block(block) else _vllm
        found.append((block.start, reader.console_result(block)))
    found += [(i + 1, values) for i, values in seed_results(lines)]
    found.sort(key=lambda item: item[0])
    return [values for _, values in found]


def _loads(text: str, where: str) -> Any:
    """``json.loads``; a document Python cannot hold is malformed, not a crash (bad syntax
    stays a ``JSONDecodeError``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # int() reads at most sys.get_int_max_str_digits() digits
        raise Malformed(f"{where}a number in the JSON has too many digits to read") from None
    except RecursionError:
        raise Malformed(f"{where}the JSON is nested too deeply to read") from None


def _documents(text: str) -> list[tuple[str, Any]]:
    """The file's JSON documents, each with where it is (``""`` or ``"line 3: "``)."""
    try:
        return [("", _loads(text, ""))]
    except json.JSONDecodeError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:
            raise Malformed(f"not valid JSON: {whole.msg} (line {whole.lineno}, column "
                            f"{whole.colno})") from None
        docs = []
        for n, line in lines:
            try:
                docs.append((f"line {n}: ", _loads(line, f"line {n}: ")))
            except json.JSONDecodeError as exc:
                raise Malformed(f"line {n}: not valid JSON ({exc.msg}, column {exc.colno}); "
                                "expected one JSON document, or one JSON object per line") \
                    from None
        return docs


def _json(text: str) -> list[Values]:
    out: list[Values] = []
    for where, doc in _documents(text):
        items = list(enumerate(doc)) if isinstance(doc, list) else [(None, doc)]
        for i, obj in items:
            at = where if i is None else f"{where}[{i}]: "
            if not isinstance(obj, dict):
                raise Malformed(f"{at or 'the file: '}expected a JSON object, found "
                                f"{type(obj).__name__}")
            out += _object(obj, at)
    return out


def _object(obj: dict[str, Any], where: str) -> list[Values]:
    if _guidellm.is_guidellm_json(obj):
        return _guidellm.results(obj, where)
    if _aiperf.is_aiperf_json(obj):
        return [_aiperf.result(obj, where)]
    if _sglang.is_sglang_json(obj):
        return [_sglang.json_result(obj, where)]
    if _vllm.is_vllm_json(obj):
        return [_vllm.json_result(obj, where)]
    keys = ", ".join(list(obj)[:8]) + (", …" if len(obj) > 8 else "")
    raise Malformed(f"{where or 'the file: '}a JSON object of no known format (keys: {keys}); "
                    f"expected {EXPECTED}")
