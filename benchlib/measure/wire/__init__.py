"""The wire: one keep-alive HTTP/1.1 connection per stream (dialled outside every clock) and
their pool, the endpoint, what is sent for a prompt, the SSE decoder, every read stamped by
the kernel, how far each arrival time can be trusted (its bounds), and a captured stream read
into what the request produced.

Its modules are private; :mod:`benchlib.measure` re-exports what other packages use.
"""
