"""benchlib.engines._commands: where a launched engine's port comes from."""

from __future__ import annotations

import socket
from pathlib import Path

from benchlib.engines import free_port


def _range(tmp_path: Path, low: int, high: int) -> Path:
    path = tmp_path / "ip_local_port_range"
    path.write_text(f"{low}\t{high}\n")
    return path


def test_the_port_lies_below_the_ephemeral_range_and_is_free(tmp_path: Path) -> None:
    """Outgoing connections get ports from the ephemeral range: one picked below it cannot be
    handed to a connection between the pick and the engine's bind."""
    ephemeral = _range(tmp_path, 32768, 60999)
    ports = {free_port(ephemeral=ephemeral) for _ in range(50)}
    assert all(20000 <= p < 32768 for p in ports), sorted(ports)
    assert len(ports) > 40  # drawn, not one fixed port two pickers would share
    for port in list(ports)[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_a_taken_port_is_never_picked(tmp_path: Path) -> None:
    """With all but one port of a narrow room taken, the free one is found (bound to check)."""
    held = []
    try:
        for port in range(20000, 21000):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
                s.listen()
            except OSError:
                s.close()
                continue
            held.append(s)
        free = held.pop(len(held) // 2)
        want = free.getsockname()[1]
        free.close()
        # the room is [20000, 21000): 999 ports taken, and 64 draws, so most runs fall back
        got = free_port(ephemeral=_range(tmp_path, 21000, 60999))
        assert got == want or not 20000 <= got < 21000, got
    finally:
        for s in held:
            s.close()


def test_without_a_readable_range_the_kernel_picks(tmp_path: Path) -> None:
    """macOS has no such file; a range that leaves no room below it is not used either."""
    port = free_port(ephemeral=tmp_path / "missing")
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
    assert free_port(ephemeral=_range(tmp_path, 20500, 60999)) > 0
