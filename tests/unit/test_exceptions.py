"""The exception tree in ``benchlib/_exceptions.py``'s docstring is the real one, every
exception class is defined there, and the one helper that maps pydantic's validation errors
names what a user typed."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from benchlib import _exceptions
from benchlib._exceptions import BenchlibError, validation_message, validation_problems

ROOT = Path(__file__).resolve().parents[2] / "benchlib"
_BUILTIN_EXCEPTIONS = {n for n, v in vars(builtins).items()
                       if isinstance(v, type) and issubclass(v, BaseException)}
#: one line of the drawn tree: its indent, the class, its exit code ("-": outside the tree)
_TREE_LINE = re.compile(r"^    (?P<indent>(?:│   |    )*)(?P<branch>├── |└── )?(?P<name>\w+) \.+ "
                        r"(?P<code>\d+|-)  \S")


def _defined_exceptions() -> dict[str, tuple[str, list[str]]]:
    """Every exception class defined under benchlib/: name → (module, base names)."""
    classes: dict[str, tuple[str, list[str]]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else b.attr
                         for b in node.bases if isinstance(b, ast.Name | ast.Attribute)]
                classes[node.name] = (module, bases)
    known = set(_BUILTIN_EXCEPTIONS)
    while True:  # a class is an exception when a base is one (builtin or found so far)
        more = {n for n, (_, bases) in classes.items() if n not in known and set(bases) & known}
        if not more:
            break
        known |= more
    return {n: c for n, c in classes.items() if n in known}


def _drawn_tree() -> dict[str, tuple[str | None, str]]:
    """The docstring's tree: name → (parent drawn above it, exit code)."""
    doc = _exceptions.__doc__ or ""
    tree: dict[str, tuple[str | None, str]] = {}
    stack: list[str] = []
    for line in doc.splitlines():
        m = _TREE_LINE.match(line)
        if m is None:
            continue
        depth = len(m["indent"]) // 4 + (1 if m["branch"] else 0)
        del stack[depth:]
        tree[m["name"]] = (stack[-1] if stack else None, m["code"])
        stack.append(m["name"])
    return tree


def test_every_exception_class_is_in_the_docstring_tree() -> None:
    defined = _defined_exceptions()
    drawn = _drawn_tree()
    assert {"BenchlibError", "UsageError", "RecipeError", "EngineError"} <= set(defined)
    assert set(drawn) == set(defined), (
        f"missing from the tree: {sorted(set(defined) - set(drawn))}; "
        f"drawn but not defined: {sorted(set(drawn) - set(defined))}")


def test_every_exception_class_is_defined_in_exceptions_py() -> None:
    """One place for the whole tree (issue 38): the modules that raise them import them."""
    elsewhere = {n: m for n, (m, _) in _defined_exceptions().items()
                 if m != "benchlib._exceptions"}
    assert not elsewhere, f"exception classes outside benchlib/_exceptions.py: {elsewhere}"


def test_the_tree_draws_real_parents_and_exit_codes() -> None:
    defined = _defined_exceptions()
    for name, (parent, code) in _drawn_tree().items():
        module, bases = defined[name]
        if parent is not None:
            assert parent in bases, f"{name} is drawn under {parent}, derives from {bases}"
        cls = getattr(importlib.import_module(module), name)
        if code == "-":
            assert not issubclass(cls, BenchlibError), f"{name} is a BenchlibError"
        else:
            assert issubclass(cls, BenchlibError), name
            assert cls.exit_code == int(code), f"{name}: exit code {cls.exit_code}, drawn {code}"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_model_len: int = Field(1, ge=1)
    items: list[int] = []
    low: int = 0
    high: int = 0

    @model_validator(mode="after")
    def _order(self) -> _Spec:
        if self.low > self.high:
            raise ValueError("--low is above --high")
        return self


def _error(**data: object) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        _Spec.model_validate(data)
    return info.value


def test_problems_name_key_paths_and_flags() -> None:
    exc = _error(max_model_len=0, items=[1, "x"], typo=1)
    assert [w for w, _ in validation_problems(exc)] == ["max_model_len", "items[1]", "typo"]
    assert validation_problems(exc, prefix="plan.")[0][0] == "plan.max_model_len"
    assert [w for w, _ in validation_problems(exc, flags=True)] == [
        "--max-model-len", "--items", "--typo"]
    assert validation_problems(exc)[2][1] == "unknown key (misspelt?)"
    named = validation_problems(exc, flags={"max_model_len": "--context"})
    assert [w for w, _ in named] == ["--context", "--items", "--typo"]


def test_a_model_validator_s_message_stands_alone() -> None:
    exc = _error(low=2, high=1)
    assert validation_problems(exc) == [("", "--low is above --high")]
    assert validation_message(exc, flags=True) == "--low is above --high"
    assert validation_message(_error(max_model_len=0, low=2), flags=True).startswith(
        "--max-model-len: Input should be greater than or equal to 1")
