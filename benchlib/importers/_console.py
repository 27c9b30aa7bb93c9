"""The ``Serving Benchmark Result`` console block, as ``vllm bench serve`` and
``python -m sglang.bench_serving`` print it, cut out of a log and read line by line.

Both tools print (their source: ``print("{s:{c}^{n}}".format(s=" Serving Benchmark Result ",
n=50, c="="))``, then ``"{:<40} {:<10}".format(label, value)`` lines, ``-----Section-----``
rules and a closing ``"=" * 50``). Logs copied into blogs often lose the padding
(``Successful requests: 10``); a block quoted with a prefix (``# `` in a shell script) keeps
it on every line. Both are read. A block that is never closed, or holds a line that is neither
a rule nor ``label: value``, is malformed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from benchlib.importers._common import Malformed, Values, percentile_key, text_float, text_int

__all__ = ["Block", "Kind", "Line", "apply_labels", "read_value", "serving_blocks", "stat_key"]

_HEADER = re.compile(r"=+ Serving Benchmark Result =+")
_CLOSE = re.compile(r"^={10,}$")
_RULE = re.compile(r"^-{3,}\s*(.*?)\s*-{3,}$")
_LABELLED = re.compile(r"^(?P<label>[^:]+:)\s*(?P<value>.*)$")
_STAT = re.compile(r"^(?P<stat>Mean|Median|P(?P<p>\d+(?:\.\d+)?)) (?P<name>.+) \(ms\):$")
#: labels printed without a value (a sub-list follows)
_HEADINGS = frozenset({"Per-position acceptance (%):"})

#: how a label's value is read: int, float, float from ms, text, or a rate/limit word
Kind = Literal["int", "float", "str", "rate", "limit"]


@dataclass(frozen=True)
class Line:
    """One ``label: value`` line of a block (the label with its spacing collapsed)."""

    number: int
    section: str
    label: str
    value: str


@dataclass(frozen=True)
class Block:
    """One result block: where it starts (1-based line), its lines, and the log lines since
    the previous block (``vllm bench serve`` prints the traffic settings there)."""

    start: int
    lines: tuple[Line, ...]
    preamble: tuple[str, ...]

    def where(self, line: Line | None = None) -> str:
        return f"line {line.number if line else self.start}"


def _unreadable(number: int, body: str, start: int) -> Malformed:
    return Malformed(f"line {number}: cannot read {body!r} in the result block starting at "
                     f"line {start} (expected 'label: value')")


def serving_blocks(text_lines: list[str]) -> list[Block]:
    """Every ``Serving Benchmark Result`` block in a log, in order."""
    blocks: list[Block] = []
    i, after_last = 0, 0
    while i < len(text_lines):
        match = _HEADER.search(text_lines[i])
        if match is None:
            i += 1
            continue
        prefix = text_lines[i][:match.start()]
        start = i
        lines: list[Line] = []
        section = ""
        i += 1
        while True:
            if i >= len(text_lines):
                raise Malformed(f"line {start + 1}: the result block is never closed (expected "
                                "a line of '=' after its last metric)")
            raw = text_lines[i]
            body = (raw[len(prefix):] if raw.startswith(prefix) else raw).strip()
            i += 1
            if not body:
                continue
            if _CLOSE.match(body):
                break
            if _HEADER.search(body):
                raise Malformed(f"line {start + 1}: the result block is never closed (a new "
                                f"one starts at line {i})")
            if (rule := _RULE.match(body)) is not None:
                section = rule.group(1)
                continue
            labelled = _LABELLED.match(body)
            if labelled is None:
                raise _unreadable(i, body, start + 1)
            label = " ".join(labelled.group("label").split())
            value = labelled.group("value").strip()
            if not value and label not in _HEADINGS:
                raise _unreadable(i, body, start + 1)
            lines.append(Line(i, section, label, value))
        preamble = tuple(t[len(prefix):] if t.startswith(prefix) else t
                         for t in text_lines[after_last:start])
        blocks.append(Block(start + 1, tuple(lines), preamble))
        after_last = i
    return blocks


def stat_key(label: str, names: Mapping[str, str]) -> str | None:
    """``"P99 TTFT (ms):"`` → ``"p99_ttft_ms"`` for a statistic line of a metric in
    ``names`` (printed name → vLLM name); ``None`` for any other label."""
    match = _STAT.match(label)
    if match is None or match.group("name") not in names:
        return None
    metric = names[match.group("name")]
    stat = match.group("stat")
    head = percentile_key(match.group("p")) if match.group("p") else stat.lower()
    return f"{head}_{metric}_ms"


def read_value(kind: Kind, value: str, what: str) -> object:
    """A console value as ``kind`` says: ``rate`` is ``"inf"`` or a number, ``limit`` a whole
    number or ``None`` for ``None`` / ``not set``."""
    if kind == "int":
        return text_int(value, what)
    if kind == "float":
        return text_float(value, what)
    if kind == "rate":
        word = value.split()[0]
        return "inf" if word == "inf" else text_float(word, what)
    if kind == "limit":
        return None if value in ("None", "not set") else text_int(value, what)
    return value


def apply_labels(block: Block, table: Mapping[str, tuple[str, Kind]],
                 names: Mapping[str, str], values: Values, extra: dict[str, Any]) -> None:
    """Read ``block``'s lines into ``values`` (vLLM keys) and ``extra`` (``table`` targets
    named ``extra:key``): labels from ``table``, statistics of the metrics in ``names``.
    A label the table does not know is kept in ``extra["unrecognized_lines"]``; a label seen
    twice is malformed."""
    seen: set[str] = set()
    unrecognized: list[str] = []
    for line in block.lines:
        what = f"{block.where(line)}: {line.label.rstrip(':')}"
        if line.label in seen:
            raise Malformed(f"{what} appears twice in one result block")
        seen.add(line.label)
        if (key := stat_key(line.label, names)) is not None:
            values[key] = text_float(line.value, what)
        elif line.label in table:
            target, kind = table[line.label]
            value = read_value(kind, line.value, what)
            if target.startswith("extra:"):
                extra[target[6:]] = value
            else:
                values[target] = value
        elif line.label not in _HEADINGS:
            unrecognized.append(f"{line.label} {line.value}")
    if unrecognized:
        extra["unrecognized_lines"] = unrecognized
    for required in ("Successful requests:", "Benchmark duration (s):"):
        if required not in seen:
            raise Malformed(f"{block.where()}: the result block has no {required!r} line")

