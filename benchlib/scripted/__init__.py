"""The scripted streaming server: known timings and stream shapes, with a truth file.

A measuring instrument for the client (tests and ``benchmarks/``), never a stand-in for an
engine. Start it with ``benchlib scripted-server``.
"""

from benchlib.scripted._config import ScriptConfig
from benchlib.scripted._server import ScriptedServer

__all__ = ["ScriptConfig", "ScriptedServer"]
