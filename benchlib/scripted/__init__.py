"""The scripted streaming server: known timings and stream shapes, with a truth file.

A measuring instrument for the client (tests and ``benchmarks/``), never a stand-in for an
engine. Start it with ``benchlib scripted-server``; ``--fault KIND[:every=N|:fraction=F]``
injects the faults a client must survive and name (see :data:`FAULT_KINDS`).
"""

from benchlib.scripted._config import FAULT_KINDS, FaultKind, FaultRule, ScriptConfig
from benchlib.scripted._server import ScriptedServer

__all__ = ["FAULT_KINDS", "FaultKind", "FaultRule", "ScriptConfig", "ScriptedServer"]
