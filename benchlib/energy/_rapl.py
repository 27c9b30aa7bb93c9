"""CPU energy through RAPL, as the Linux powercap driver exposes it: one energy counter per
domain under ``/sys/class/powercap/intel-rapl:*`` (Intel, and AMD since Zen), in microjoules,
wrapping at the domain's ``max_energy_range_uj``.

The domains summed are the CPU packages (``package-N``, the top-level zones) and their
``dram`` subzones where the platform has them (DRAM is not part of a package's count on
servers); the packages' ``core`` and ``uncore`` subzones are inside the package's count and
are left out. A machine with no package zone but a ``psys`` one (the whole SoC, on some
laptops) is read through ``psys`` alone. The reader takes the powercap root as a path, so a
test can point it at a tree it wrote.

Since the fix for CVE-2020-8694 (PLATYPUS) ``energy_uj`` is readable by root only on most
kernels: the reader then refuses to start, saying so.
"""

from __future__ import annotations

from pathlib import Path

from benchlib.energy._readings import Device, Reading, Source

__all__ = ["POWERCAP", "RaplReader"]

POWERCAP = Path("/sys/class/powercap")


def _read_int(path: Path) -> int:
    return int(path.read_text(encoding="ascii").strip())


def _zones(root: Path) -> list[tuple[str, Path]]:
    """The domains to sum, as (name, zone folder)."""
    top = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
    named = [(p.joinpath("name").read_text(encoding="ascii").strip(), p) for p in top
             if p.joinpath("name").is_file()]
    packages = [(n, p) for n, p in named if n.startswith("package")]
    if not packages:
        return [(n, p) for n, p in named if n == "psys"]
    zones = list(packages)
    for name, pkg in packages:
        for sub in sorted(root.glob(f"{pkg.name}:*")):
            label = sub.joinpath("name")
            if label.is_file() and label.read_text(encoding="ascii").strip() == "dram":
                zones.append((f"dram ({name})", sub))
    return zones


class RaplReader:
    """Reads the RAPL domains under ``root``. Raises ``RuntimeError`` saying why when there
    is none, or one cannot be read."""

    source: Source = "rapl"

    def __init__(self, root: Path = POWERCAP) -> None:
        if not root.is_dir():
            raise RuntimeError(f"no RAPL: {root} does not exist (no powercap driver, or not "
                               "exposed to this container)")
        zones = _zones(root)
        if not zones:
            raise RuntimeError(f"no RAPL: no intel-rapl package or psys zone under {root}")
        devices = []
        for name, zone in zones:
            try:
                _read_int(zone / "energy_uj")
                wrap = _read_int(zone / "max_energy_range_uj")
            except PermissionError:
                raise RuntimeError(f"RAPL: cannot read {zone / 'energy_uj'}: permission denied "
                                   "(root only on most kernels since CVE-2020-8694)") from None
            except (OSError, ValueError) as exc:
                raise RuntimeError(f"RAPL: cannot read {zone}: {exc}") from None
            devices.append(Device(name=name, counter_unit_j=1e-6, counter_wrap=wrap,
                                  power_source="none"))
        self._files = [zone / "energy_uj" for _, zone in zones]
        self._devices = tuple(devices)

    @property
    def devices(self) -> tuple[Device, ...]:
        return self._devices

    def read(self) -> tuple[Reading, ...]:
        """Every domain's counter now (None where a read failed)."""
        out = []
        for path in self._files:
            try:
                out.append(Reading(counter=_read_int(path)))
            except (OSError, ValueError):
                out.append(Reading())
        return tuple(out)

    def close(self) -> None:
        """Nothing to release: each read opens and closes its file."""
