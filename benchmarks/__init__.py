"""Benchmarks: benchlib side by side with its peers, in one run."""
