"""Results and their keys: the typed result JSON and benchlib's own settings kept in it, the
per-request records and the console block laid out like vllm bench serve's.

Its modules are private; :mod:`benchlib.measure` re-exports what other packages use.
"""
