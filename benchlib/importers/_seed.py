"""The results block of the seed 000 write-up's scripts (``requests_benchmark.py`` and
``openai_benchmark.py``, ``/work/shared/seeds/000_*.txt``): one streamed chat request, timed
with ``time.time()``, printed as::

    ==================================================
    === glm-5.2-fp8 vLLM 성능 측정 결과 ===          (openai_benchmark.py: "… 벤치마크 결과 ===")
    ==================================================
    총 생성 토큰 수 : 366 tokens
    전체 소요 시간 : 4.3270 초
    TTFT (첫 토큰) : 0.0714 초 (Prefill 지연)
    TPOT (토큰당 시간): 0.0117 초/토큰 (Decode 속도)
    Throughput : 85.77 tokens/sec
    ==================================================

What the script computes, and where it goes:

* the title's model is the ``model`` it sent → ``model_id``; one request → ``num_prompts`` 1;
  the script exits before printing when the request fails or yields no text, so a printed
  block is one successful request → ``completed`` 1, ``failed`` 0;
* ``TTFT`` = first chunk carrying ``content`` or ``reasoning`` text − start, in **seconds** →
  ``mean_ttft_ms``, × 1000 exactly (one request: its TTFT is the mean). vLLM starts TTFT at the
  first chunk with choices (a role-only chunk counts); this starts it at the first text;
* ``전체 소요 시간`` (total time) = start (before the POST) → end of the stream, seconds: the
  run's wall time, which is what vLLM's ``duration`` is for a one-request run → ``duration``;
* ``총 생성 토큰 수`` counts SSE chunks with text, not tokens (a chunk may carry several,
  e.g. under MTP speculative decoding) → ``extra["output_chunks"]``, and
  ``total_output_tokens`` is ``None``;
* ``TPOT`` = (end − first text chunk) / (chunks − 1): per *chunk*, and ending after ``[DONE]``
  → ``extra["tpot_per_chunk_ms"]`` (× 1000), not vLLM's per-token TPOT;
* ``Throughput`` = 1 / that TPOT, one request's decode rate in chunks per second →
  ``extra["decode_chunks_per_s"]``, not vLLM's ``output_throughput`` (tokens / duration).

The script prints no version, date, prompt length or latency percentiles (``None``).
"""

from __future__ import annotations

import re

from benchlib.importers._common import MS_PER_S, Malformed, Values, text_float, text_int

__all__ = ["seed_results"]

_TITLE = re.compile(r"^=== (?P<model>.+?) (?P<kind>vLLM 성능 측정 결과|벤치마크 결과) ===$")
#: the script's rule, ``"=" * 50``; text glued after it (a copy that lost the newline) is not
#: part of the block
_RULE = re.compile(r"^={50}")
_SCRIPTS = {"vLLM 성능 측정 결과": "requests_benchmark.py", "벤치마크 결과": "openai_benchmark.py"}
_FIELDS = {
    "총 생성 토큰 수": re.compile(r"^총 생성 토큰 수\s*:\s*(\S+)\s*tokens$"),
    "전체 소요 시간": re.compile(r"^전체 소요 시간\s*:\s*(\S+)\s*초$"),
    "TTFT": re.compile(r"^TTFT \(첫 토큰\)\s*:\s*(\S+)\s*초(?:\s*\(Prefill 지연\))?$"),
    "TPOT": re.compile(r"^TPOT \(토큰당 시간\)\s*:\s*(\S+)\s*초/토큰(?:\s*\(Decode 속도\))?$"),
    "Throughput": re.compile(r"^Throughput\s*:\s*(\S+)\s*tokens/sec$"),
}


def _block(lines: list[str], title: int) -> tuple[Values, int]:
    """The block whose title is at ``lines[title]``; returns it and the index after it."""
    match = _TITLE.match(lines[title].strip())
    assert match is not None
    where = f"line {title + 1}"
    i = title + 1
    if i >= len(lines) or not _RULE.match(lines[i].strip()):
        raise Malformed(f"{where}: expected a line of '=' under the title {lines[title]!r}")
    found: dict[str, tuple[str, str]] = {}  # name → (value, "line N: name")
    i += 1
    while True:
        if i >= len(lines):
            raise Malformed(f"{where}: the results block is never closed (expected a line of "
                            "'=' after 'Throughput')")
        text = lines[i].strip()
        i += 1
        if not text:
            continue
        if _RULE.match(text):
            break
        hit = next(((n, m) for n, rx in _FIELDS.items() if (m := rx.match(text))), None)
        if hit is None or hit[0] in found:
            raise Malformed(f"line {i}: cannot read {text!r} in the results block at {where} "
                            f"(expected {', '.join(_FIELDS)})")
        found[hit[0]] = (hit[1].group(1), f"line {i}: {hit[0]}")
    missing = [n for n in _FIELDS if n not in found]
    if missing:
        raise Malformed(f"{where}: the results block has no {', '.join(missing)} line")
    values: Values = {
        "source_format": "seed000-console", "model_id": match.group("model"), "num_prompts": 1,
        "completed": 1, "failed": 0,
        "duration": text_float(*found["전체 소요 시간"]),
        "mean_ttft_ms": text_float(*found["TTFT"], MS_PER_S),
        "extra": {
            "script": _SCRIPTS[match.group("kind")],
            "output_chunks": text_int(*found["총 생성 토큰 수"]),
            "tpot_per_chunk_ms": text_float(*found["TPOT"], MS_PER_S),
            "decode_chunks_per_s": text_float(*found["Throughput"]),
        },
    }
    return values, i


def seed_results(lines: list[str]) -> list[tuple[int, Values]]:
    """Every seed 000 results block in a log, with its title's line index."""
    out: list[tuple[int, Values]] = []
    i = 0
    while i < len(lines):
        if _TITLE.match(lines[i].strip()) and i > 0 and _RULE.match(lines[i - 1].strip()):
            values, after = _block(lines, i)
            out.append((i, values))
            i = after
        else:
            i += 1
    return out
