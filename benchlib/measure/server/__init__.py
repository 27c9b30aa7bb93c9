"""The engine's own view: its /metrics scraped around a scenario, one vocabulary of server
metrics, and speculative decoding's counters set against the client's streams.

Its modules are private; :mod:`benchlib.measure` re-exports what other packages use.
"""
