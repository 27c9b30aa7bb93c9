"""One notebook executed by papermill, with nothing secret echoed or saved, and nothing that
ties the saved notebook to where the run folder happens to be.

* The kernel runs in the run folder, so the runner's parameters are paths relative to it.
* papermill's console echo of every cell goes through a
  :class:`~benchlib._secrets.ScrubbingWriter` (``log_output`` stays off: papermill's logger
  would echo the same text unfiltered).
* Each cell's outputs are scrubbed as the cell ends, before papermill saves the notebook
  (``on_cell_executed``); autosaves in the middle of a cell are off, since they would save
  outputs not yet scrubbed. A long cell's progress still shows on the console.
* The saved notebook's ``input_path`` / ``output_path`` metadata are made relative (to the
  kit root and the run folder), so a run folder can be moved or shared.
* :func:`execute_step` says how it went: papermill's failed cell (its index and execution
  count kept apart), a cell timeout (which papermill saves as if it succeeded), a dead
  kernel, or an error output found in the saved notebook.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlib._secrets import ScrubbingWriter, scrub_file, scrub_text
from benchlib.pipeline._sidecar import Params, Status, StepError

__all__ = ["KERNEL", "execute_step", "run_notebook"]

KERNEL = "benchlib"


def _ipc_config(folder: str) -> Any:
    """Kernel channels over Unix sockets in ``folder`` instead of TCP ports: TCP ports are
    picked free and then bound later, which races with anything else on the machine (an
    engine, a scripted server) and once in a while kills the kernel at start."""
    from traitlets.config import Config

    return Config({"KernelManager": {"transport": "ipc", "ip": f"{folder}/k"}})


#: run in the kernel before the first cell: tqdm.auto (imported by transformers) warns that
#: ipywidgets is missing each time a notebook loads a tokenizer; its text bars are fine
_KERNEL_EXEC_LINES = ("import warnings; warnings.filterwarnings('ignore', "
                      "message='IProgress not found')",)


def _kernel_name() -> str:
    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().find_kernel_specs()
    return KERNEL if KERNEL in specs else "python3"


def _scrub_value(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, list):
        return [_scrub_value(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_value(v, secrets) for k, v in value.items()}
    return value


def _cell_scrubber(secrets: Sequence[str]) -> Any:
    """nbclient's ``on_cell_executed`` hook: secret values out of the cell's outputs (stream
    text, results, tracebacks) in place, before papermill writes the notebook."""

    def hook(cell: Any, **_: Any) -> None:
        for output in cell.get("outputs", []):
            for key, value in list(output.items()):
                output[key] = _scrub_value(value, secrets)

    return hook


def _relative_metadata(notebook: Path, source: Path, root: Path) -> None:
    """Record the notebook's source relative to the kit root and itself by name."""
    if not notebook.is_file():
        return
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    meta = nb.get("metadata", {}).get("papermill")
    if not isinstance(meta, dict):
        return
    meta["input_path"] = os.path.relpath(source, root) if source.is_relative_to(root) else (
        str(source))
    meta["output_path"] = notebook.name
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def run_notebook(source: Path, notebook: Path, params: Params, *, root: Path,
                 secrets: Sequence[str], timeout: float) -> None:
    """Execute ``source`` into ``notebook`` with ``params``, the kernel working in
    ``notebook``'s folder; raises what papermill raises (a failed cell, a cell timeout, a
    dead kernel) after the saved notebook has been scrubbed and made relative."""
    import papermill as pm

    ipc_dir = tempfile.mkdtemp(prefix="benchlib-kernel-")
    out, err = ScrubbingWriter(sys.stdout, secrets), ScrubbingWriter(sys.stderr, secrets)
    try:
        pm.execute_notebook(
            str(source), str(notebook), parameters=params, kernel_name=_kernel_name(),
            execution_timeout=timeout, progress_bar=False, log_output=False, stdout_file=out,
            stderr_file=err, cwd=str(notebook.parent), config=_ipc_config(ipc_dir),
            autosave_cell_every=0, on_cell_executed=_cell_scrubber(secrets),
            extra_arguments=[f"--IPKernelApp.exec_lines={line}" for line in _KERNEL_EXEC_LINES])
    finally:
        out.close()
        err.close()
        shutil.rmtree(ipc_dir, ignore_errors=True)
        scrub_file(notebook, secrets)  # a cell that timed out never reached the hook
        _relative_metadata(notebook, source, root)


def execute_step(source: Path, notebook: Path, params: Params, *, root: Path,
                 secrets: Sequence[str], timeout: float) -> tuple[Status, StepError | None]:
    """:func:`run_notebook`, and how it went: ``("ok", None)`` or the status and error."""
    import papermill as pm
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    try:
        run_notebook(source, notebook, params, root=root, secrets=secrets, timeout=timeout)
    except pm.PapermillExecutionError as exc:
        return "failed", StepError(ename=exc.ename, evalue=exc.evalue,
                                   cell_index=exc.cell_index, exec_count=exc.exec_count)
    except CellTimeoutError as exc:
        return "timeout", StepError(ename="CellTimeoutError", evalue=str(exc).splitlines()[0],
                                    hint=f"a cell ran past cell_timeout_s={timeout:g}")
    except DeadKernelError as exc:
        return "failed", StepError(ename="DeadKernelError", evalue=str(exc))
    return _check_saved(notebook)


def _check_saved(path: Path) -> tuple[Status, StepError | None]:
    """papermill marks a timed-out cell nowhere: look at the saved notebook ourselves."""
    if not path.is_file():
        return "failed", StepError(ename="MissingNotebook", evalue=path.name)
    nb = json.loads(path.read_text(encoding="utf-8"))
    if nb.get("metadata", {}).get("papermill", {}).get("exception"):
        return "failed", StepError(ename="PapermillException", evalue="see notebook")
    for i, cell in enumerate(nb.get("cells", [])):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return "failed", StepError(ename=output.get("ename", "Error"),
                                           evalue=output.get("evalue", ""), cell_index=i,
                                           exec_count=cell.get("execution_count"))
    return "ok", None
