"""What a notebook needs when no runner drives it: the recipe from a YAML file, a run
folder of its own, and an endpoint to talk to.

A notebook opened in JupyterLab (its kernel works in ``notebooks/``) or run with plain
papermill from anywhere starts from its parameters' defaults: the demo recipe, no run
folder (a step that writes files makes a scratch one under ``outputs/notebooks/``), and
the recipe's endpoint or, for an engine the runner would start, a scripted server started
here for the length of the step. Under ``benchlib run`` every parameter is given and none
of these defaults apply.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

from benchlib._exceptions import UsageError
from benchlib.measure import Endpoint
from benchlib.recipe import Recipe, open_recipe
from benchlib.runs import RunFolder, kit_root, load_recipe_snapshot

__all__ = ["endpoint", "load", "outputs", "results_file", "scratch_outputs", "step_folder",
           "tls_options", "url_context"]


def outputs() -> Path:
    """Where ``benchlib run`` writes by default (the kit's ``outputs/``)."""
    return kit_root() / "outputs"


def scratch_outputs() -> Path:
    """Where notebooks run on their own make their run folders."""
    return outputs() / "notebooks"


def _find(path: Path) -> Path:
    """``path`` as given when it exists (absolute, or relative to the working folder),
    else relative to the kit (``params/demo.yaml`` from a kernel in ``notebooks/``)."""
    if path.is_absolute() or path.exists():
        return path
    in_kit = kit_root() / path
    return in_kit if in_kit.exists() else path


def load(recipe_path: str | Path) -> Recipe:
    """The recipe, every path absolute: a run's ``recipe.json`` (what the runner passes;
    its paths are relative to the kit) or a YAML recipe (its relative paths are taken from
    the kit's root, where ``make demo`` runs it)."""
    if not str(recipe_path):
        raise UsageError("recipe_path", "empty: give a YAML recipe, e.g. params/demo.yaml")
    path = _find(Path(recipe_path))
    if path.suffix == ".json":
        return load_recipe_snapshot(path)
    return open_recipe(path, kit_root())


def step_folder(run_dir: str | Path, recipe: Recipe, *, scratch: bool) -> RunFolder | None:
    """The run folder a step writes into: ``run_dir`` when given; else, for a step that
    writes files (``scratch``), a new dated folder under ``outputs/notebooks/`` (named on
    the console); else none."""
    if str(run_dir):
        return RunFolder(path=Path(run_dir))
    if not scratch:
        return None
    folder = RunFolder.create(scratch_outputs(), recipe.name)
    print(f"run folder: {folder.path}", flush=True)
    return folder


def results_file(results_path: str | Path, folder: RunFolder | None, step: str) -> str:
    """Where a step saves its results: ``results_path``, else its run folder's results
    file, else nowhere (``""``)."""
    if str(results_path):
        return str(results_path)
    return str(folder.results(step)) if folder is not None else ""


def _die_with_parent() -> None:
    """In the child: be sent SIGTERM when the kernel that started it dies (Linux)."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class TlsOptions(TypedDict, total=False):
    """The recipe's TLS settings, as measure_config and Endpoint.parse take them."""

    ca_bundle: Path | None
    insecure: bool


def tls_options(recipe: Recipe, url: str) -> TlsOptions:
    """The recipe's TLS settings (``ca_bundle``, ``insecure``) for a measurement of ``url``:
    none for a plain ``http://`` URL (a notebook's own base_url, a scripted stand-in)."""
    if not url.startswith("https://"):
        return {}
    return {"ca_bundle": recipe.engine.ca_bundle, "insecure": recipe.engine.insecure}


def url_context(recipe: Recipe, url: str) -> ssl.SSLContext | None:
    """The TLS context for the kit's own requests to ``url`` (readiness, the 1-token check,
    the openai SDK's checks): the one :meth:`~benchlib.measure.Endpoint.tls_context`
    builds, with the recipe's settings; None for ``http://``."""
    if not url.startswith("https://"):
        return None
    return Endpoint.parse(url, **tls_options(recipe, url)).tls_context()


@contextlib.contextmanager
def endpoint(recipe: Recipe, base_url: str) -> Iterator[str]:
    """The URL to talk to: ``base_url``; else the recipe's endpoint; else (a recipe whose
    engine the runner would start) a scripted server started now, serving the recipe's
    model name with known timings, and stopped when the block ends."""
    if base_url:
        yield base_url
        return
    if recipe.engine.base_url:
        yield recipe.engine.base_url
        return
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlib", "scripted-server", "--port", "0", "--model",
         recipe.model.served_model_name, "--ttft-ms", "5", "--itl-ms", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=_die_with_parent)  # runs in the child before exec: nothing else
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            raise UsageError("base_url", f"no base_url given, and the scripted server did "
                                         f"not start: {line}{proc.stdout.read()}")
        url = line.split()[-1]
        print(f"no base_url: a scripted server at {url} stands in for the {recipe.engine.kind} "
              "engine (pass base_url to talk to a real one)", flush=True)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
