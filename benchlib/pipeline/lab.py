"""``make lab``: JupyterLab on the kit's notebooks, as users run it — often as root inside
a GPU container, always without a browser on that machine.

The command is built here so that ``make lab`` and its test start the same thing:
``--no-browser`` (headless: the server prints its URL, token included), ``--allow-root``
when the effective user is root (JupyterLab refuses to start otherwise), and the notebooks
folder as the server's root. ``python -m benchlib.pipeline.lab [ARGS…]`` runs it; ARGS go
to JupyterLab (e.g. ``--ip 0.0.0.0 --port 8888`` to reach it from outside a container).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from benchlib.runs import kit_root

__all__ = ["lab_command", "main"]


def lab_command(extra: Sequence[str] = (), *, app: Literal["jupyterlab", "jupyter_server"]
                = "jupyterlab", root_dir: Path | None = None, euid: int | None = None
                ) -> list[str]:
    """The command line: ``app`` (JupyterLab, or the bare Jupyter server it runs on) from
    this interpreter, serving ``root_dir`` (default: the kit's notebooks)."""
    argv = [sys.executable, "-m", app, "--no-browser",
            f"--ServerApp.root_dir={root_dir or kit_root() / 'notebooks'}"]
    if (os.geteuid() if euid is None else euid) == 0:
        argv.append("--allow-root")
    return [*argv, *extra]


def main(argv: Sequence[str] | None = None) -> None:
    """Replace this process with JupyterLab (Ctrl-C reaches it directly)."""
    command = lab_command(sys.argv[1:] if argv is None else argv)
    print(" ".join(command), flush=True)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
