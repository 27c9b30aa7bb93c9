"""scripted: the kit's own scripted server (``python -m benchlib scripted-server --host …
--port … --model NAME``, :mod:`benchlib.scripted`), a measuring instrument with known timings
(its answers carry no model's text: results from it are already flagged synthetic). A recipe
with ``engine.kind: scripted`` runs the whole pipeline with no engine installed; ``engine.args``
pass its own settings (``--ttft-ms 30``, ``--fault …``). ``engine.python``: the interpreter
with benchlib installed (default: this one).
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchlib.adapters._base import EngineAdapter, LaunchInputs

__all__ = ["SCRIPTED"]


class _Scripted(EngineAdapter):
    def environment_python(self, python: Path | None) -> Path | None:
        return Path(sys.executable) if python is None else python

    def command(self, launch: LaunchInputs) -> tuple[list[str], str]:
        python = sys.executable if launch.python is None else str(launch.python)
        return [python, "-m", "benchlib", "scripted-server", "--host", launch.host,
                "--port", str(launch.port), "--model", launch.served_name], launch.ready_path


SCRIPTED = _Scripted(name="scripted", label="the scripted server", python_program=True,
                     no_flag_set="the scripted server: its flags are the kit's own (benchlib "
                                 "scripted-server --help)")
