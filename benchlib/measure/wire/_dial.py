"""Opening a connection: connect to each resolved address in turn and, for ``https``, shake
hands — outside every request's clock — with the socket set up for kernel receive stamps
(TCP_NODELAY, SO_TIMESTAMPNS where the kernel gives it)."""

from __future__ import annotations

import asyncio
import socket
import ssl

from benchlib._tls import TlsChannel
from benchlib._wire import enable_rx_timestamps
from benchlib.measure.wire._endpoint import Address, Endpoint, resolve

__all__ = ["dial"]


async def dial(endpoint: Endpoint, timeout: float, addrs: list[Address] | None = None,
               context: ssl.SSLContext | None = None
               ) -> tuple[socket.socket, bool, TlsChannel | None]:
    """The connected socket, whether its reads carry kernel stamps, and its TLS channel
    (None for ``http``). ``addrs``: the endpoint's resolved addresses (resolved here when
    None); ``context``: the pool's TLS context (else the endpoint's). A failed handshake
    raises ``ssl.SSLError`` (an ``OSError``), an untrusted certificate
    ``ssl.SSLCertVerificationError``; no address that connects, the last ``OSError``."""
    loop = asyncio.get_running_loop()
    if addrs is None:
        addrs = await resolve(endpoint)
    last: OSError | None = None
    for family, kind, proto, addr in addrs:
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, addr), timeout)
        except (OSError, TimeoutError) as exc:
            sock.close()
            last = exc if isinstance(exc, OSError) else OSError(
                f"connect timed out after {timeout:g} s")
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stamps = enable_rx_timestamps(sock)
        if not endpoint.tls:
            return sock, stamps, None
        tls = TlsChannel(context or endpoint.tls_context(), server_side=False,
                         server_hostname=endpoint.host)
        try:
            await tls.handshake(loop, sock, timeout)
        except TimeoutError:
            sock.close()
            raise OSError(f"TLS handshake timed out after {timeout:g} s") from None
        except OSError:
            sock.close()
            raise  # another address would present the same certificate
        return sock, stamps, tls
    raise last or OSError(f"cannot resolve {endpoint.host}")
