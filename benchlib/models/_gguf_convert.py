"""GGUF files of a Hugging Face model folder, written by llama.cpp's own converter.

What: :func:`convert_to_gguf` runs ``convert_hf_to_gguf.py`` (kept by ``make llamacpp`` in
``.engines/llamacpp/`` with its ``gguf-py`` and ``conversion`` package, from the same
llama.cpp tree as ``llama-server``) on a model folder, with ``--outtype f16`` / ``q8_0`` …;
:func:`make_tiny_gguf` writes ``<name>-f16.gguf`` and ``<name>-q8_0.gguf`` of the tiny model.
The F16 file is the target a llama.cpp benchmark serves; the Q8_0 file, from the same weights
and vocabulary, is its draft model for speculative decoding (nearly the same outputs,
smaller).

Why the converter and not our own writer: the file is then exactly what a llama.cpp user
gets for this architecture (metadata keys, tensor names, tokenizer fields, quantization).

The one workaround: the converter identifies a BPE tokenizer's pre-tokenizer by hashing how
it splits a fixed text, and refuses one it has no hash for ("BPE pre-tokenizer was not
recognized"). The tiny model's tokenizer is trained locally, so no hash can be listed; it
is a byte-level BPE with GPT-2's split regex, which llama.cpp knows as ``gpt-2``. The
converter runs with ``conversion.base.TextModel.get_vocab_base_pre`` wrapped so that an
unrecognised tokenizer is declared ``pre_tokenizer`` (default ``gpt-2``); a recognised one
keeps its own name.

The converter needs torch, numpy and transformers, which the kit's environment does not
carry: it runs in ``python`` (``make model-gguf`` uses the vLLM CPU engine's interpreter),
executing this very file as a script (:func:`_run_converter`), so this module imports only
the standard library at the top.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["GGUF_OUTTYPES", "TINY_GGUF_OUTTYPES", "convert_to_gguf", "gguf_name",
           "import_gguf", "llamacpp_python_paths", "make_tiny_gguf"]

#: the converter's ``--outtype`` choices that the kit uses
GGUF_OUTTYPES = ("f32", "f16", "bf16", "q8_0")
#: the tiny model's two files: the speculative target (f16) and its draft (q8_0)
TINY_GGUF_OUTTYPES = ("f16", "q8_0")


def llamacpp_python_paths(llamacpp_dir: Path) -> list[str]:
    """What goes first on ``sys.path`` for llama.cpp's Python side: its ``gguf-py`` (ahead
    of any installed ``gguf``, so the package matches the tree) and the folder itself
    (``conversion``, ``convert_hf_to_gguf``)."""
    return [str(llamacpp_dir / "gguf-py"), str(llamacpp_dir)]


def import_gguf(llamacpp_dir: Path) -> Any:
    """llama.cpp's ``gguf`` package from ``llamacpp_dir/gguf-py`` (what ``make llamacpp``
    keeps beside the converter), imported into this interpreter (it needs numpy and
    PyYAML). Raises :class:`~benchlib.UsageError` naming ``--llamacpp`` when it is not
    there."""
    from benchlib._exceptions import UsageError

    if not (llamacpp_dir / "gguf-py" / "gguf" / "__init__.py").is_file():
        raise UsageError("--llamacpp", f"{llamacpp_dir} has no gguf-py/gguf "
                         "(make llamacpp keeps it there)")
    for path in reversed(llamacpp_python_paths(llamacpp_dir)):
        if path not in sys.path:
            sys.path.insert(0, path)
    return importlib.import_module("gguf")


def gguf_name(model_dir: Path, outtype: str) -> str:
    """``tiny-llama`` + ``q8_0`` → ``tiny-llama-q8_0.gguf``."""
    return f"{model_dir.name}-{outtype}.gguf"


def convert_to_gguf(model_dir: Path, out_file: Path, outtype: str, *, llamacpp_dir: Path,
                    python: str | Path = sys.executable, pre_tokenizer: str = "gpt-2",
                    extra_args: Sequence[str] = ()) -> Path:
    """Convert ``model_dir`` into ``out_file`` (written whole or not at all).

    ``llamacpp_dir`` holds ``convert_hf_to_gguf.py``, ``conversion/`` and ``gguf-py/``;
    ``python`` is an interpreter with torch, numpy and transformers; ``extra_args`` go to
    the converter as they are (``--model-name NAME`` …). Raises
    :class:`~benchlib.UsageError` for a missing input and
    :class:`~benchlib._exceptions.BenchlibError` when the converter fails (its output tail
    in the message).
    """
    from benchlib._exceptions import BenchlibError, UsageError

    if outtype not in GGUF_OUTTYPES:
        raise UsageError("--outtype", f"{outtype!r} is not one of {', '.join(GGUF_OUTTYPES)}")
    if not (model_dir / "config.json").is_file():
        raise UsageError("--model", f"{model_dir} has no config.json")
    if not (llamacpp_dir / "convert_hf_to_gguf.py").is_file():
        raise UsageError("--llamacpp", f"{llamacpp_dir} has no convert_hf_to_gguf.py "
                         "(make llamacpp keeps it there)")
    out_file.parent.mkdir(parents=True, exist_ok=True)
    partial = out_file.with_name(f".{out_file.name}.partial")
    argv = [str(python), str(Path(__file__).resolve()), "--llamacpp",
            str(llamacpp_dir.resolve()), "--pre-tokenizer", pre_tokenizer, "--",
            str(model_dir.resolve()), "--outfile", str(partial), "--outtype", outtype,
            *extra_args]
    done = subprocess.run(argv, capture_output=True, text=True, check=False,
                          env={**os.environ, "NO_LOCAL_GGUF": "1"})  # we put gguf-py first
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-25:])
        raise BenchlibError(f"convert_hf_to_gguf.py ({outtype}) failed with exit code "
                            f"{done.returncode}:\n{tail}")
    os.replace(partial, out_file)
    return out_file


def make_tiny_gguf(model_dir: Path, out_dir: Path, *, llamacpp_dir: Path,
                   python: str | Path = sys.executable,
                   outtypes: Sequence[str] = TINY_GGUF_OUTTYPES) -> list[Path]:
    """``out_dir/<name>-<outtype>.gguf`` for each of ``outtypes`` (default f16 and q8_0)."""
    return [convert_to_gguf(model_dir, out_dir / gguf_name(model_dir, t), t,
                            llamacpp_dir=llamacpp_dir, python=python) for t in outtypes]


def _run_converter(argv: list[str]) -> None:
    """In the converter's interpreter: import llama.cpp's converter from ``--llamacpp``,
    declare an unrecognised BPE pre-tokenizer as ``--pre-tokenizer``, run its ``main`` with
    the arguments after ``--``."""
    split = argv.index("--")
    opts = dict(zip(argv[:split:2], argv[1:split:2], strict=True))
    llamacpp, pre = Path(opts["--llamacpp"]), opts["--pre-tokenizer"]
    sys.path[:0] = llamacpp_python_paths(llamacpp)
    import conversion.base  # type: ignore[import-not-found]  # llama.cpp's, on sys.path

    original = conversion.base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self: object, tokenizer: object) -> str:
        try:
            name: str = original(self, tokenizer)
        except NotImplementedError:
            print(f"gguf_convert: BPE pre-tokenizer not recognised: declared {pre!r}",
                  file=sys.stderr)
            return pre
        return name

    conversion.base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    import convert_hf_to_gguf  # type: ignore[import-not-found]

    sys.argv = [str(llamacpp / "convert_hf_to_gguf.py"), *argv[split + 1:]]
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    _run_converter(sys.argv[1:])
