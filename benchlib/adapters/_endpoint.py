"""endpoint: a server already running (a hosted API, a TLS proxy, an engine started by hand):
the kit starts nothing, so the recipe gives ``engine.base_url``; no process to lower in
priority (``engine.nice``), no flags, no parallel sizes of its own."""

from __future__ import annotations

from benchlib.adapters._base import EngineAdapter

__all__ = ["ENDPOINT"]

ENDPOINT = EngineAdapter(name="endpoint", label="an endpoint", starts_process=False,
                         no_flag_set="an endpoint: the kit starts nothing")
