"""The load: paced releases under a concurrency limit, warmups and timeouts, one measurement
end to end, the load split over worker processes or Ray actors, multi-turn conversations,
and what happens to a request once it ends.

Its modules are private; :mod:`benchlib.measure` re-exports what other packages use.
"""
