"""Engine kind names are written only in the adapters: a test reads every module of benchlib.

Every ``str`` constant equal to a registered kind name (``"vllm"``, ``"endpoint"`` …) outside
``benchlib/adapters/`` fails, naming ``file:line``, unless :data:`ALLOWED` lists it: the same
word with another meaning (the scenario's ``endpoint`` type, ``range_ratio_mode``'s
conventions named after vLLM's and SGLang's benchmark tools, the scripted server's package and
model name). The counts are exact, so a new use of the word fails too and gets a look.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchlib.adapters import ADAPTERS

BENCHLIB = Path(__file__).resolve().parents[3] / "benchlib"
EXEMPT = BENCHLIB / "adapters"

#: (module, literal) → (how many times, why it is not an engine kind)
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("_layers.py", "scripted"): (1, "the package benchlib.scripted in the layer table"),
    ("cli/scripted.py", "scripted"): (1, "scripted-server's default --model name"),
    ("scripted/_config.py", "scripted"): (1, "the scripted server's default model name"),
    ("engines/_flagsets/_model.py", "llamacpp"): (
        2, "FlagSet.style: llama.cpp's command-line syntax (no --flag=value), a parser style "
           "stored in cached flag sets beside argparse's"),
    ("importers/_aiperf.py", "endpoint"): (1, "AIPerf's JSON member 'endpoint'"),
    ("measure/workload/_datasets.py", "vllm"): (3, "range_ratio_mode: vllm bench serve's length draw"),
    ("measure/workload/_datasets.py", "sglang"): (2, "range_ratio_mode: SGLang bench_serving's draw"),
    ("measure/results/_settings.py", "vllm"): (1, "range_ratio_mode, as the result records it"),
    ("measure/results/_settings.py", "sglang"): (1, "range_ratio_mode, as the result records it"),
    ("measure/workload/_text_prompts.py", "vllm"): (1, "range_ratio_mode's default"),
    ("measure/workload/_workload.py", "vllm"): (3, "range_ratio_mode: its type, default and check"),
    ("measure/workload/_workload.py", "sglang"): (2, "range_ratio_mode: its type and check"),
    ("pipeline/__init__.py", "endpoint"): (1, "the function pipeline.endpoint in __all__"),
    ("pipeline/_dry_build.py", "endpoint"): (1, "the scenario's endpoint field a flag names"),
    ("pipeline/_standalone.py", "endpoint"): (1, "the function endpoint in __all__"),
    ("report/_html.py", "endpoint"): (3, "the scenario's endpoint type in the report tables"),
    ("runs/_summary.py", "endpoint"): (2, "the summary table's endpoint type column"),
}


def kind_literals(path: Path, kinds: frozenset[str]) -> list[tuple[int, str]]:
    """``(line, literal)`` of every ``str`` constant in ``path`` equal to one of ``kinds``
    (docstrings and f-string text never equal a bare kind name, so prose passes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value in kinds)


def problems(root: Path, kinds: frozenset[str], allowed: dict[tuple[str, str], tuple[int, str]],
             exempt: Path | None = None) -> list[str]:
    """Every kind literal under ``root`` outside ``exempt`` that ``allowed`` does not cover
    (``file:line: 'kind'``), and every allowance whose count no longer matches."""
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        if exempt is not None and path.is_relative_to(exempt):
            continue
        rel = path.relative_to(root).as_posix()
        for line, literal in kind_literals(path, kinds):
            found.setdefault((rel, literal), []).append(line)
    out: list[str] = []
    for (rel, literal), lines in found.items():
        count = allowed.get((rel, literal), (0, ""))[0]
        if len(lines) != count:
            where = ", ".join(f"{rel}:{n}" for n in lines)
            out.append(f"{where}: {literal!r} ×{len(lines)} (allowed ×{count}); ask the "
                       "engine's adapter (benchlib.adapters) instead of naming the kind")
    out += [f"{rel}: {literal!r} allowed ×{count}, found none: drop the allowance"
            for (rel, literal), (count, _) in allowed.items() if (rel, literal) not in found]
    return out


KINDS = frozenset(ADAPTERS)


def test_engine_kinds_are_named_only_in_the_adapters() -> None:
    found = problems(BENCHLIB, KINDS, ALLOWED, EXEMPT)
    assert not found, "engine kind names outside benchlib/adapters:\n" + "\n".join(found)


def test_every_allowance_says_why() -> None:
    for key, (count, why) in ALLOWED.items():
        assert count >= 1 and len(why) > 10, key
        assert key[1] in KINDS, key


@pytest.mark.parametrize("source", [
    'def f(kind: str) -> bool:\n    return kind == "vllm"\n',
    'KINDS = ("sglang", "llamacpp")\n',
    'from typing import Literal\nK = Literal["openjet"]\n',
    'def f(kind: str) -> bool:\n    return kind in {"endpoint"}\n',
])
def test_a_planted_kind_literal_is_caught(tmp_path: Path, source: str) -> None:
    """The check sees a kind name in a comparison, a tuple, a Literal and a set."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(source, encoding="utf-8")
    found = problems(tmp_path, KINDS, {})
    assert found and "pkg/mod.py:" in found[0], found


def test_prose_and_other_words_pass(tmp_path: Path) -> None:
    """Docstrings, f-strings and longer strings naming an engine are prose, not kinds."""
    (tmp_path / "mod.py").write_text(
        '"""vllm and sglang."""\nx = f"{1} vllm"\ny = "vllm-cpu"\nz = "python -m vllm"\n',
        encoding="utf-8")
    assert problems(tmp_path, KINDS, {}) == []


def test_an_allowance_holds_its_count(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text('A = "endpoint"\nB = "endpoint"\n', encoding="utf-8")
    allowed = {("mod.py", "endpoint"): (1, "the scenario's endpoint type")}
    assert "×2 (allowed ×1)" in problems(tmp_path, KINDS, allowed)[0]
    assert problems(tmp_path, KINDS, {("mod.py", "endpoint"): (2, "two of them")}) == []
    stale = problems(tmp_path, KINDS, allowed | {("gone.py", "vllm"): (1, "was here")})
    assert any("drop the allowance" in p for p in stale)

