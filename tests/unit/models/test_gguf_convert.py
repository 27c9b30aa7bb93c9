"""The GGUF conversion wrapper, against a stand-in for llama.cpp's converter (no torch): the
pre-tokenizer workaround, the arguments passed on, whole-or-nothing output, named failures.
The real converter runs in ``make model-gguf`` and ``tests/integration/test_llamacpp.py``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib._exceptions import BenchlibError
from benchlib.cli import main
from benchlib.models import convert_to_gguf, gguf_name, make_tiny_gguf

#: llama.cpp's layout: conversion.base.TextModel raises for an unknown BPE pre-tokenizer
BASE = '''
class TextModel:
    def get_vocab_base_pre(self, tokenizer):
        if tokenizer == "known":
            return "llama-bpe"
        raise NotImplementedError("BPE pre-tokenizer was not recognized - update ...")
'''
#: writes what it was asked and what the (wrapped) pre-tokenizer check said
CONVERTER = '''
import json, sys
import gguf
from conversion.base import TextModel

def main():
    args = sys.argv[1:]
    out = args[args.index("--outfile") + 1]
    if "fail" in args[0]:
        raise SystemExit("cannot convert " + args[0])
    record = {"args": args, "gguf": gguf.WHERE, "pre": TextModel().get_vocab_base_pre(None),
              "known": TextModel().get_vocab_base_pre("known")}
    open(out, "w").write(json.dumps(record))
'''


@pytest.fixture
def llamacpp(tmp_path: Path) -> Path:
    root = tmp_path / "llamacpp"
    (root / "conversion").mkdir(parents=True)
    (root / "conversion" / "__init__.py").write_text("")
    (root / "conversion" / "base.py").write_text(BASE)
    (root / "gguf-py" / "gguf").mkdir(parents=True)
    (root / "gguf-py" / "gguf" / "__init__.py").write_text("WHERE = 'tree'\n")
    (root / "convert_hf_to_gguf.py").write_text(CONVERTER)
    return root


def _model(tmp_path: Path, name: str = "tiny-llama") -> Path:
    model = tmp_path / name
    model.mkdir()
    (model / "config.json").write_text("{}")
    return model


def test_unknown_pre_tokenizer_is_declared_and_arguments_pass_on(tmp_path: Path,
                                                                  llamacpp: Path) -> None:
    model = _model(tmp_path)
    out = convert_to_gguf(model, tmp_path / "out" / "x.gguf", "q8_0", llamacpp_dir=llamacpp,
                          python=sys.executable)
    record = json.loads(out.read_text())
    assert record["pre"] == "gpt-2" and record["known"] == "llama-bpe"
    assert record["gguf"] == "tree"  # the tree's gguf-py, not an installed one
    args = record["args"]
    assert args[0] == str(model.resolve()) and args[-2:] == ["--outtype", "q8_0"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["x.gguf"]  # no partial left


def test_tiny_pair_through_the_cli(tmp_path: Path, llamacpp: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path)
    assert main(["tiny-gguf", "--model", str(model), "--out", str(tmp_path / "g"),
                 "--llamacpp", str(llamacpp), "--python", sys.executable]) == 0
    names = ["tiny-llama-f16.gguf", "tiny-llama-q8_0.gguf"]
    assert sorted(p.name for p in (tmp_path / "g").iterdir()) == names
    assert capsys.readouterr().out.count("gguf: ") == 2
    assert gguf_name(model, "f16") == names[0]


def test_failures_are_named_and_leave_nothing(tmp_path: Path, llamacpp: Path) -> None:
    bad = _model(tmp_path, "fail-model")
    with pytest.raises(BenchlibError, match=r"failed with exit code 1:\n.*cannot convert"):
        make_tiny_gguf(bad, tmp_path / "g", llamacpp_dir=llamacpp, python=sys.executable)
    assert not any((tmp_path / "g").iterdir())
    with pytest.raises(UsageError, match="--llamacpp"):
        convert_to_gguf(bad, tmp_path / "x.gguf", "f16", llamacpp_dir=tmp_path)
    with pytest.raises(UsageError, match="--outtype"):
        convert_to_gguf(bad, tmp_path / "x.gguf", "q4_k", llamacpp_dir=llamacpp)
    with pytest.raises(UsageError, match="--model"):
        convert_to_gguf(tmp_path, tmp_path / "x.gguf", "f16", llamacpp_dir=llamacpp)
