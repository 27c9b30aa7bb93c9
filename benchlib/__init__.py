"""benchlib: reproducible LLM-serving benchmarks.

Subpackages: :mod:`benchlib.measure` (streaming load measurement), :mod:`benchlib.scripted`
(a scripted streaming server with known timings), :mod:`benchlib.models` (a tiny offline
model), :mod:`benchlib.engines` (launching real engines).
"""

from benchlib._exceptions import BenchlibError, MeasureError, UsageError

__version__ = "0.1.0"

__all__ = ["BenchlibError", "MeasureError", "UsageError", "__version__"]
