"""Where requests go: an ``http://`` base URL parsed once, and its addresses resolved once.

Kept apart from the connection so that the pool and the connection both use it without
importing each other.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Address", "Endpoint", "resolve"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where requests go: host, port and the URL path prefix of an ``http://`` base URL."""

    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, base_url: str) -> Endpoint:
        """Parse ``http://host:port[/prefix]``; a trailing ``/v1`` is kept as the prefix."""
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"expected http://HOST[:PORT][/PATH], got {base_url!r}")
        return cls(parts.hostname, parts.port or 80, parts.path.rstrip("/"))

    def path(self, api_path: str) -> str:
        """The request target for an API path such as ``/v1/completions``."""
        if self.prefix.endswith("/v1") and api_path.startswith("/v1/"):
            return self.prefix + api_path[3:]
        return self.prefix + api_path

    @property
    def host_header(self) -> str:
        return f"{self.host}:{self.port}"


#: one resolved address: family, type, protocol, sockaddr
Address = tuple[socket.AddressFamily, socket.SocketKind, int, Any]


async def resolve(endpoint: Endpoint) -> list[Address]:
    """The endpoint's addresses, resolved once (per pool, not per connection)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
    return [(family, kind, proto, addr) for family, kind, proto, _, addr in infos]
