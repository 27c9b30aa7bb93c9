"""Workloads and datasets: what is sent and how (the workload and the run's settings), the
prompt sets (random, text from the kit's corpus, sglang-random, a trace), their seeds, the
sampling keys, the arrival schedule and how much of a set a prefix cache could share.

Its modules are private; :mod:`benchlib.measure` re-exports what other packages use.
"""
