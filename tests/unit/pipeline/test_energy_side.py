"""03_measure's energy without a server: which hosts are this machine, the scenario's window
from its result, the runs whose devices are not read (a remote endpoint, an engine over
several nodes) — with the reason, never a figure — and what a finished measurement's block
flags (failed requests, token counts from the tokenizer)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from benchlib.energy import Device, EnergySampler, Reading, Source, Window
from benchlib.measure import RunMetrics, TokenSources
from benchlib.pipeline.steps._energy import (
    EnergyRun,
    energy_jsonl,
    is_local_host,
    scenario_window,
    start_energy,
)
from benchlib.recipe import Recipe, recipe_from_dict


@pytest.mark.parametrize("host,local", [("127.0.0.1", True), ("localhost", True),
                                        ("127.3.4.5", True), ("::1", True),
                                        ("192.0.2.7", False), ("198.51.100.1", False),
                                        ("no-such-host.invalid", False)])
def test_which_hosts_are_this_machine(host: str, local: bool) -> None:
    assert is_local_host(host) is local


def _metrics(**fields: Any) -> RunMetrics:
    """A measurement's metrics with only ``fields`` set (what the energy side reads)."""
    return RunMetrics.model_construct(**fields)


def test_the_scenarios_window_is_its_duration_ending_at_its_last_request() -> None:
    result = _metrics(start_times=[100.2, 100.0, 0.0, 100.5],
                                        duration_first_send_ms=3000.0, duration=3.1)
    window = scenario_window(result)
    assert window is not None
    assert window.end_s == pytest.approx(103.0) and window.seconds == pytest.approx(3.1)
    assert scenario_window(_metrics(
        start_times=[], duration_first_send_ms=None, duration=0.0)) is None
    assert isinstance(window, Window)


def test_the_samples_file_sits_beside_the_result() -> None:
    assert energy_jsonl(Path("m/chat-c4.json")) == Path("m/chat-c4.energy.jsonl")


def recipe(base_url: str, nodes: int = 1) -> Recipe:
    return recipe_from_dict({"name": "t", "model": {"id": "m"},
                             "engine": {"kind": "endpoint", "base_url": base_url},
                             "hardware": {"nodes": nodes, "gpu_count": 1},
                             "scenarios": [{"name": "chat"}]})


def test_a_remote_endpoint_or_several_nodes_give_the_reason() -> None:
    remote = start_energy(recipe("http://192.0.2.7:8000"), "http://192.0.2.7:8000")
    assert remote.sampler is None and remote.reason is not None
    assert "192.0.2.7 is not this machine" in remote.reason
    done = remote.finish(_metrics(), Path("chat-c1.json"))
    assert done.source is None and done.energy_j is None and done.reason == remote.reason
    spread = start_energy(recipe("http://127.0.0.1:8000", nodes=2), "http://127.0.0.1:8000")
    assert spread.reason is not None and "spans 2 nodes" in spread.reason


class SteadyGpu:
    """A reader standing in for NVML: one GPU drawing 300 W, its counter in mJ."""

    source: Source = "nvml"
    devices = (Device("GPU 0 (test)", counter_unit_j=1e-3, power_source="instant"),)

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.closed = False

    def read(self) -> tuple[Reading, ...]:
        mj = int(300.0 * (time.perf_counter() - self.t0) * 1e3)
        return (Reading(counter=mj, power_w=300.0, throttle=("gpu_idle",)),)

    def close(self) -> None:
        self.closed = True


def test_finish_flags_what_the_per_token_figure_leaves_out(tmp_path: Path) -> None:
    reader = SteadyGpu()
    sampler = EnergySampler(reader, interval_s=0.02, idle_s=0.1)
    sampler.start()
    first = time.perf_counter()
    time.sleep(0.3)
    result = _metrics(
        start_times=[first, first + 0.1], duration_first_send_ms=300.0, duration=0.3,
        total_output_tokens=60, completed=1, failed=1,
        output_tokens_source=TokenSources(usage=0, tokenizer=1))
    run = EnergyRun(sampler, None, ["the GPU choice assumed something"])
    block = run.finish(result, tmp_path / "chat-c2.json")
    assert reader.closed
    assert block.energy_j is not None
    assert block.energy_j == pytest.approx(90.0, rel=0.1)
    assert block.energy_j_per_output_token == pytest.approx(block.energy_j / 60)
    assert block.energy_j_per_request == pytest.approx(block.energy_j)
    flags = " | ".join(block.flags)
    assert "the GPU choice assumed something" in flags
    assert "1 of 1 requests' output tokens were counted with the tokenizer" in flags
    assert "1 request(s) failed" in flags
    assert block.samples_file == "chat-c2.energy.jsonl"
    assert (tmp_path / "chat-c2.energy.jsonl").is_file()
