"""Readiness beyond "the port answers": one real 1-token request must succeed.

A server can list its models before it can generate (vLLM answers ``/v1/models`` while
warm-up finishes; open-jet opens its port only after load). The probe asks for one token,
non-streamed, so a run starts only against an engine that has produced output.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

from benchlib._tls import tls_error_message

__all__ = ["first_token", "http_ok"]


def http_ok(url: str, timeout: float = 2.0, api_key: str | None = None,
            context: ssl.SSLContext | None = None) -> bool:
    """Whether GET ``url`` answers 200 (with the bearer token, for servers started with an
    API key, which guard ``/v1/models`` too; ``context``: an https URL's TLS settings)."""
    req = urllib.request.Request(url)
    if api_key:
        req.add_header("authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def first_token(base_url: str, model: str, *, chat: bool, api_key: str | None = None,
                timeout: float = 120.0, context: ssl.SSLContext | None = None) -> str | None:
    """Ask for one token; return ``None`` on success, else why it failed (one line)."""
    path = "/v1/chat/completions" if chat else "/v1/completions"
    body: dict[str, object] = {"model": model, "max_tokens": 1, "temperature": 0.0}
    if chat:
        body["messages"] = [{"role": "user", "content": "Hi"}]
    else:
        body["prompt"] = "Hi"
    req = urllib.request.Request(base_url.rstrip("/") + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    if api_key:
        req.add_header("authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            json.loads(resp.read())
            return None
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}: {exc.read()[:200].decode('utf-8', 'replace')}"
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, ssl.SSLError):  # say what to do, not OpenSSL's repr
            return (f"{tls_error_message(exc.reason)} (a private CA or a self-signed server: "
                    "set engine.ca_bundle to its PEM file; engine.insecure checks nothing)")
        return f"{type(exc).__name__}: {exc}"
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
