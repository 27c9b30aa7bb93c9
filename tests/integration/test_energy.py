"""03_measure's energy against the scripted server: a real scenario measured, its ``energy``
block in the step's results and its columns in the summary table.

On this machine (no NVIDIA driver, no /sys/class/powercap) the block says why there are no
figures and every figure is null; with a powercap tree written in tmp_path, whose package
counter a thread advances as a steady 40 W would (wrapping), the same path reads RAPL over
the scenario's own window and the figures come out as 40 W says they must."""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchlib.energy import open_reader
from benchlib.pipeline.steps import _energy
from benchlib.pipeline.steps import measure as _measure
from benchlib.recipe import Recipe, recipe_from_dict
from benchlib.runs import STEP_MEASURE


def make_recipe(url: str, tiny_model: Path, gpu_count: int | None) -> Recipe:
    hardware = {} if gpu_count is None else {"hardware": {"gpu_count": gpu_count}}
    return recipe_from_dict({
        "name": "energy", "model": {"id": "scripted", "local_path": str(tiny_model)},
        "engine": {"kind": "endpoint", "base_url": url}, **hardware,
        "scenarios": [{"name": "chat", "endpoint": "chat", "input_len": 32, "output_len": 16,
                       "concurrencies": [2], "num_prompts": 12, "num_warmups": 1}]})


def measured(recipe: Recipe, tmp_path: Path, tiny_model: Path) -> tuple[dict[str, Any], Any]:
    done = _measure.measure_scenarios(recipe, run_dir=tmp_path / "run",
                                      model_path=tiny_model)
    results = done.folder.result(STEP_MEASURE)
    assert results is not None
    return results.measurements["chat/c2"].model_dump(mode="json", exclude_unset=True), \
        done.table


def test_no_nvml_no_rapl_gives_the_reason_never_zeros(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    if not isinstance(open_reader("any"), str):
        pytest.skip("this machine has NVML or RAPL: the reason is not what it shows")
    server = scripted("--ttft-ms", "5", "--itl-ms", "2", "--model", "scripted")
    record, table = measured(make_recipe(server.url, tiny_model, None), tmp_path, tiny_model)
    assert record["completed"] == 12
    energy = record["energy"]
    assert energy["source"] is None
    assert "NVML" in energy["reason"] and "RAPL" in energy["reason"]
    for key in ("energy_j", "energy_j_per_output_token", "avg_power_w", "peak_power_w",
                "idle_power_w", "energy_includes_idle"):
        assert energy[key] is None, key
    row = table.iloc[0]
    for column in ("energy_j_per_output_token", "avg_power_w", "peak_power_w",
                   "idle_power_w"):
        assert row[column] is None or math.isnan(row[column]), column


@pytest.fixture
def package_at_40_w(tmp_path: Path) -> Iterator[Path]:
    """A powercap tree whose package-0 counter advances as 40 W would, wrapping at 50 J."""
    root = tmp_path / "powercap"
    zone = root / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("50000000\n")
    energy = zone / "energy_uj"
    energy.write_text("0\n")
    t0 = time.perf_counter()
    stop = threading.Event()

    def advance() -> None:
        while not stop.is_set():
            tmp = zone / "energy_uj.tmp"
            tmp.write_text(f"{int(40.0 * (time.perf_counter() - t0) * 1e6) % 50_000_000}\n")
            tmp.replace(energy)
            time.sleep(0.002)

    writer = threading.Thread(target=advance, daemon=True)
    writer.start()
    yield root
    stop.set()
    writer.join()


def test_a_cpu_run_reads_rapl_over_the_scenarios_window(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path,
        package_at_40_w: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_measure, "start_energy", functools.partial(
        _energy.start_energy, powercap=package_at_40_w, idle_s=0.5))
    server = scripted("--ttft-ms", "20", "--itl-ms", "40", "--model", "scripted")
    record, table = measured(make_recipe(server.url, tiny_model, 0), tmp_path, tiny_model)
    energy = record["energy"]
    assert energy["source"] == "rapl" and energy["reason"] is None, energy
    assert energy["devices"] == ["package-0"] and energy["method"] == "counter"
    # the scenario's own window: its duration, the span output_throughput divides by
    assert energy["window_s"] == pytest.approx(record["duration"], rel=1e-6)
    assert energy["avg_power_w"] == pytest.approx(40.0, rel=0.15)
    assert energy["idle_power_w"] == pytest.approx(40.0, rel=0.15)
    low, high = energy["energy_j_bounds"]
    assert low <= 40.0 * record["duration"] * 1.02 and high >= 40.0 * record["duration"] * 0.98
    assert energy["energy_j_per_output_token"] == pytest.approx(
        energy["energy_j"] / record["total_output_tokens"])
    assert energy["energy_j_per_request"] == pytest.approx(energy["energy_j"] / 12)
    assert energy["energy_includes_idle"] is True
    assert energy["energy_above_idle_j"] == pytest.approx(0.0, abs=0.15 * energy["energy_j"])
    samples = tmp_path / "run" / "measure" / energy["samples_file"]
    assert samples.name == "chat-c2.energy.jsonl"
    assert len(samples.read_text().splitlines()) > 10
    row = table.iloc[0]
    assert row["energy_j_per_output_token"] == pytest.approx(
        energy["energy_j_per_output_token"])
    assert row["avg_power_w"] == pytest.approx(energy["avg_power_w"])
