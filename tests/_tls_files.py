"""A self-signed certificate for the TLS tests, made with the ``openssl`` command line (no
extra Python package)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TlsFiles", "make_tls_files"]


@dataclass(frozen=True)
class TlsFiles:
    """A self-signed certificate for ``localhost`` and ``127.0.0.1``, and its key (PEM)."""

    cert: Path
    key: Path

    def server_args(self) -> tuple[str, ...]:
        """The scripted server's flags to serve HTTPS with it."""
        return ("--tls-cert", str(self.cert), "--tls-key", str(self.key))


def make_tls_files(folder: Path) -> TlsFiles | str:
    """A fresh certificate and key in ``folder``, or why they could not be made."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    openssl = shutil.which("openssl") or "/usr/bin/openssl"
    try:
        proc = subprocess.run(
            [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "1",
             "-keyout", str(key), "-out", str(cert)], capture_output=True, text=True,
            check=False, timeout=60)
    except OSError as exc:
        return f"cannot run {openssl}: {exc}"
    if proc.returncode != 0 or not cert.is_file():
        return f"{openssl} failed: {proc.stderr.strip()}"
    return TlsFiles(cert, key)
