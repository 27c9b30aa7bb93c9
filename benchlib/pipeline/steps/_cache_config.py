"""vLLM's ``vllm:cache_config_info`` from its ``/metrics``: the labels 02_launch sets beside
the plan (block size, blocks, KV bytes and tokens)."""

from __future__ import annotations

import http.client
import ssl
import urllib.error
import urllib.request

from benchlib.measure import metrics_url

__all__ = ["read_cache_config", "scrape_cache_config"]


def read_cache_config(metrics_text: str) -> dict[str, str]:
    """The labels of vLLM's ``vllm:cache_config_info`` in a ``/metrics`` text (block_size,
    num_gpu_blocks, kv_cache_memory_bytes, kv_cache_size_tokens …); ``{}`` without it."""
    from prometheus_client.parser import text_string_to_metric_families

    lines = [ln for ln in metrics_text.splitlines() if "vllm:cache_config_info" in ln]
    for family in text_string_to_metric_families("\n".join(lines) + "\n"):
        for sample in family.samples:
            if sample.name == "vllm:cache_config_info":
                return dict(sample.labels)
    return {}


def scrape_cache_config(base_url: str, api_key: str | None = None, timeout_s: float = 5.0,
                        context: ssl.SSLContext | None = None
                        ) -> tuple[dict[str, str], str | None]:
    """One GET of the engine's ``/metrics``: :func:`read_cache_config`'s labels, and what
    went wrong (None: nothing) — a failed scrape is said, never raised. ``context``: how to
    trust an ``https`` engine."""
    url = metrics_url(base_url)
    request = urllib.request.Request(url, headers={"accept": "text/plain"} | (
        {"authorization": f"Bearer {api_key}"} if api_key else {}))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as resp:
            text = resp.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException, urllib.error.URLError) as exc:
        return {}, f"cannot read {url}: {type(exc).__name__}: {exc}"
    try:
        return read_cache_config(text), None
    except ValueError as exc:
        return {}, f"{url} does not parse: {exc}"
