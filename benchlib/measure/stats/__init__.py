"""Statistics and bounds: vLLM's aggregate keys with their exact meaning and ours beside them,
bootstrap 95 % intervals, and what speculation costs per engine step.

Its modules are private; :mod:`benchlib.measure` re-exports what other packages use.
"""
