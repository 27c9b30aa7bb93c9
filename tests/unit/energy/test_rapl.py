"""The RAPL reader on a powercap tree written in tmp_path (real files, read as sysfs is):
which domains it sums, what it reads, why it refuses; and the sampler around it, with the
counters advancing (and wrapping) as a package drawing a steady power would."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from benchlib.energy import EnergySampler, RaplReader, Reading, Window, open_reader


def zone(root: Path, name: str, label: str, energy_uj: int, wrap: int = 262143328850) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "name").write_text(label + "\n")
    (folder / "energy_uj").write_text(f"{energy_uj}\n")
    (folder / "max_energy_range_uj").write_text(f"{wrap}\n")
    (folder / "enabled").write_text("1\n")
    return folder


@pytest.fixture
def server_tree(tmp_path: Path) -> Path:
    """Two packages, each with core and dram subzones; an mmio twin of package 0."""
    root = tmp_path / "powercap"
    zone(root, "intel-rapl:0", "package-0", 1000)
    zone(root, "intel-rapl:0:0", "core", 500)
    zone(root, "intel-rapl:0:1", "dram", 300)
    zone(root, "intel-rapl:1", "package-1", 2000)
    zone(root, "intel-rapl:1:0", "dram", 400)
    zone(root, "intel-rapl-mmio:0", "package-0", 1000)
    (root / "intel-rapl").mkdir()  # the control type's own folder: no energy
    return root


def test_packages_and_their_dram_are_summed(server_tree: Path) -> None:
    reader = RaplReader(server_tree)
    assert reader.source == "rapl"
    assert [d.name for d in reader.devices] == ["package-0", "package-1", "dram (package-0)",
                                                "dram (package-1)"]
    assert all(d.counter_unit_j == 1e-6 and d.counter_wrap == 262143328850
               for d in reader.devices)
    assert reader.read() == (Reading(counter=1000), Reading(counter=2000),
                             Reading(counter=300), Reading(counter=400))
    (server_tree / "intel-rapl:1" / "energy_uj").write_text("2500\n")
    (server_tree / "intel-rapl:0:1" / "energy_uj").unlink()  # a read that fails: no value
    assert reader.read() == (Reading(counter=1000), Reading(counter=2500), Reading(),
                             Reading(counter=400))


def test_psys_alone_without_packages(tmp_path: Path) -> None:
    zone(tmp_path, "intel-rapl:0", "psys", 7)
    assert [d.name for d in RaplReader(tmp_path).devices] == ["psys"]


def test_no_rapl_says_why(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="does not exist"):
        RaplReader(tmp_path / "absent")
    with pytest.raises(RuntimeError, match="no intel-rapl package"):
        RaplReader(tmp_path)
    zone(tmp_path, "intel-rapl:0", "package-0", 1)
    (tmp_path / "intel-rapl:0" / "max_energy_range_uj").write_text("many\n")
    with pytest.raises(RuntimeError, match="cannot read"):
        RaplReader(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_a_counter_only_root_may_read(tmp_path: Path) -> None:
    zone(tmp_path, "intel-rapl:0", "package-0", 1)
    (tmp_path / "intel-rapl:0" / "energy_uj").chmod(0)
    with pytest.raises(RuntimeError, match="permission denied"):
        RaplReader(tmp_path)


def test_a_cpu_run_reads_rapl_and_a_gpu_run_never_does(tmp_path: Path) -> None:
    zone(tmp_path, "intel-rapl:0", "package-0", 1)

    class NoNvml:
        def nvmlInit(self) -> None:
            raise OSError("NVML Shared Library Not Found")

    assert isinstance(open_reader("cpu", powercap=tmp_path), RaplReader)
    assert isinstance(open_reader("any", powercap=tmp_path, nvml=NoNvml()), RaplReader)
    why = open_reader("gpu", powercap=tmp_path, nvml=NoNvml())
    assert isinstance(why, str) and "NVML" in why
    both = open_reader("any", powercap=tmp_path / "absent", nvml=NoNvml())
    assert isinstance(both, str) and "NVML unavailable" in both and "no RAPL" in both


def test_the_sampler_over_a_package_at_a_steady_power(tmp_path: Path) -> None:
    """The counter file advances as 40 W would, wrapping every 10 J (every 0.25 s): the
    energy over a window is 40 W × its length, within the bounds. The sampler starts once the
    writer has written (a counter file still at its initial 0 is 40 W × the writer's start-up
    behind, which a busy CI machine made 0.12 s: an idle power of 88 W), and its idle window
    is 0.3 s, so a write some tens of milliseconds late stays inside the 25 % asked of it."""
    watts, wrap = 40.0, 10_000_000
    energy = zone(tmp_path, "intel-rapl:0", "package-0", 0, wrap=wrap) / "energy_uj"
    t0 = time.perf_counter()
    done, written = threading.Event(), threading.Event()

    def advance() -> None:
        while not done.is_set():
            uj = int(watts * (time.perf_counter() - t0) * 1e6) % wrap
            tmp = energy.with_suffix(".tmp")
            tmp.write_text(f"{uj}\n")
            tmp.replace(energy)
            written.set()
            time.sleep(0.002)

    writer = threading.Thread(target=advance, daemon=True)
    writer.start()
    try:
        assert written.wait(10)
        sampler = EnergySampler(RaplReader(tmp_path), interval_s=0.02, idle_s=0.3)
        sampler.start()
        assert sampler.idle is not None and sampler.idle.seconds >= 0.3
        start = time.perf_counter()
        time.sleep(0.6)
        window = Window(start, time.perf_counter())
        result = sampler.stop(window, output_tokens=100, requests=4)
    finally:
        done.set()
        writer.join()
    assert result.source == "rapl" and result.method == "counter"
    assert result.energy_j is not None and result.energy_j_bounds is not None
    low, high = result.energy_j_bounds
    assert low - 0.5 <= watts * window.seconds <= high + 0.5
    assert result.avg_power_w == pytest.approx(watts, rel=0.25)
    assert result.idle_power_w == pytest.approx(watts, rel=0.25)
    assert result.energy_j_per_output_token == pytest.approx(result.energy_j / 100)
    assert result.samples >= 10
    out = tmp_path / "samples.jsonl"
    sampler.write_samples(out, window)
    lines = out.read_text().splitlines()
    assert len(lines) == len(sampler.samples) + 1 and '"window_s"' in lines[0]
