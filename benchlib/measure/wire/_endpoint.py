"""Where requests go and how: a base URL parsed once, its TLS settings and extra headers, and
its addresses resolved once.

Kept apart from the connection so that the pool and the connection both use it without
importing each other. The one place a TLS context is built is :meth:`Endpoint.tls_context`.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from benchlib._exceptions import UsageError

__all__ = ["DEFAULT_PORTS", "Address", "Endpoint", "parse_header", "resolve"]

DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443}
#: headers benchlib frames the body with: a user's value would break the framing
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})


def parse_header(text: str, flag: str = "--header") -> tuple[str, str]:
    """``"Name: value"`` (or ``Name:value``) → ``(name, value)``; a bad one raises
    :class:`~benchlib.UsageError` naming ``flag``. The value is treated as a secret, so an
    error never repeats it."""
    name, sep, value = text.partition(":")
    name = name.strip()
    if not sep or not name or any(c.isspace() or c in '()<>@,;:\\"/[]?={}' for c in name):
        raise UsageError(flag, f"expected 'NAME: VALUE' with a header name before the "
                                     f"colon (got a header named {name[:40]!r})")
    if name.lower() in _FRAMING_HEADERS:
        raise UsageError(flag, f"{name} is set by benchlib (it frames the body)")
    return name, value.strip()


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where requests go: host, port and URL path prefix of an ``http://`` or ``https://``
    base URL; for ``https``, which certificates to trust; and headers every request carries
    (their values may be secrets: they are never in the repr)."""

    host: str
    port: int
    prefix: str
    scheme: Literal["http", "https"] = "http"
    #: trust these CA certificates (PEM) instead of the system's
    ca_bundle: Path | None = None
    #: skip certificate and host name checks (the connection is still encrypted)
    insecure: bool = False
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @classmethod
    def parse(cls, base_url: str, *, ca_bundle: Path | None = None, insecure: bool = False,
              headers: tuple[tuple[str, str], ...] = ()) -> Endpoint:
        """Parse ``http[s]://host[:port][/prefix]``; a trailing ``/v1`` is kept as the prefix.
        The port defaults to the scheme's (80, 443)."""
        parts = urlsplit(base_url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected http[s]://HOST[:PORT][/PATH], got {base_url!r}")
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"bad port in {base_url!r}") from None
        return cls(parts.hostname, port or DEFAULT_PORTS[scheme], parts.path.rstrip("/"),
                   "https" if scheme == "https" else "http", ca_bundle, insecure, headers)

    @property
    def tls(self) -> bool:
        return self.scheme == "https"

    def path(self, api_path: str) -> str:
        """The request target for an API path such as ``/v1/completions``."""
        if self.prefix.endswith("/v1") and api_path.startswith("/v1/"):
            return self.prefix + api_path[3:]
        return self.prefix + api_path

    @property
    def address(self) -> str:
        """``host:port`` (IPv6 in brackets), for messages."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def host_header(self) -> str:
        """The ``Host`` header: ``host:port``, as it always was for ``http``; for ``https``
        on 443 just the host, as browsers and curl send it to hosted APIs."""
        if self.tls and self.port == DEFAULT_PORTS["https"]:
            return f"[{self.host}]" if ":" in self.host else self.host
        return self.address

    def tls_context(self) -> ssl.SSLContext:
        """The client TLS context of this endpoint: the system's CAs (or ``ca_bundle``'s),
        host name checked, TLS 1.2 or newer, HTTP/1.1 offered by ALPN; ``insecure`` checks
        nothing. Built once per pool and shared by its connections.

        Raises :class:`~benchlib.UsageError` naming ``--ca-bundle`` for a bundle that cannot
        be read.
        """
        try:
            ctx = ssl.create_default_context(
                cafile=str(self.ca_bundle) if self.ca_bundle is not None else None)
        except (OSError, ssl.SSLError) as exc:  # a missing file, or no certificate in it
            raise UsageError("--ca-bundle", f"cannot load CA certificates from "
                                            f"{self.ca_bundle}: {exc}") from None
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx


#: one resolved address: family, type, protocol, sockaddr
Address = tuple[socket.AddressFamily, socket.SocketKind, int, Any]


async def resolve(endpoint: Endpoint) -> list[Address]:
    """The endpoint's addresses, resolved once (per pool, not per connection)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
    return [(family, kind, proto, addr) for family, kind, proto, _, addr in infos]
