"""The SLO search: the highest concurrency (or request rate) whose latencies and goodput
meet given SLOs, found by probing a live endpoint.

:func:`sweep` starts at a load (the memory plan's predicted max concurrency, or one given),
doubles it while every SLO holds (halves it while they do not), then bisects between the last
pass and the first fail down to one step. Each probe is a normal
:func:`~benchlib.measure.measure` run whose result file is kept; :class:`SweepSummary`
(``sweep.json``) lists every probe, which SLO each one missed and by how much, and the knee;
:func:`sweep_figure` draws the curve (``sweep.png``, 04_compare, the report).

SLOs (:mod:`benchlib.sweep._slo`): percentile bounds on the result's own statistics
(``ttft_p99_ms=200``) and ``vllm bench serve``'s request goodput (``--goodput ttft:200``,
exactly its definition) held to a least good fraction.
"""

from benchlib.sweep._plot import sweep_figure
from benchlib.sweep._search import Bracket, bisect_knee
from benchlib.sweep._slo import Check, Slo, evaluate, parse_slos
from benchlib.sweep._sweep import (
    PLOT_NAME,
    RUN_SWEEPS,
    SUMMARY_NAME,
    Probe,
    SweepConfig,
    SweepSummary,
    probe_name,
    read_sweeps,
    run_sweeps,
    sweep,
    sweep_row,
)

__all__ = ["PLOT_NAME", "RUN_SWEEPS", "SUMMARY_NAME", "Bracket", "Check", "Probe", "Slo",
           "SweepConfig", "SweepSummary", "bisect_knee", "evaluate", "parse_slos", "probe_name",
           "read_sweeps", "run_sweeps", "sweep", "sweep_figure", "sweep_row"]
